package main

import (
	"os"
	"testing"
)

// userCacheHome is XDG_CACHE_HOME as the tests found it, and whether it
// was set: the go commands the tests run use the user's build cache.
var userCacheHome, userCacheHomeSet = os.LookupEnv("XDG_CACHE_HOME")

// TestMain points the default compile cache and its key at temporary
// directories, so the tests share compiled code (the Go demo module
// compiles once) without touching the user's cache or configuration.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasmtask-cli-cache-")
	if err != nil {
		panic(err)
	}
	config, err := os.MkdirTemp("", "wasmtask-cli-config-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	os.Setenv("XDG_CONFIG_HOME", config)
	code := m.Run()
	os.RemoveAll(dir)
	os.RemoveAll(config)
	os.Exit(code)
}
