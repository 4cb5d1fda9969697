package plugins

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps the package's dependencies to the standard library,
// package abi and fsnotify: no Wasm runtime, no MCP SDK.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"github.com/wasmtask/wasmtask/abi": true,
		"github.com/fsnotify/fsnotify":     true,
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			stdlib := !strings.Contains(strings.Split(p, "/")[0], ".")
			if !stdlib && !allowed[p] {
				t.Errorf("%s imports %s; plugins may import only the standard library, abi and fsnotify", f, p)
			}
		}
	}
}
