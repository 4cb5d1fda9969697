package host

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/wasmtask/wasmtask/host/internal/natsstore"
	"github.com/wasmtask/wasmtask/host/internal/taskcodec"
	"github.com/wasmtask/wasmtask/taskengine"
)

// StoreConfig selects a task store that outlives this process and that
// replicas share (NATS JetStream). The zero value keeps tasks in memory.
type StoreConfig struct {
	// URL of the NATS servers with JetStream (nats://host:4222; several
	// comma-separated; credentials in the URL if the servers need them).
	URL string
	// Dir, with URL empty, starts an embedded NATS server in this process
	// that keeps the store in this directory: one server whose finished
	// results survive a crash and restart.
	Dir string
	// KeysFile is the operator's key file: the same on every replica.
	// `wasmtask store-keys` writes a new one. Required with URL; with Dir
	// alone, DIR/store.keys is used, and created (mode 0600) when missing.
	// A key file group or others may read is refused.
	KeysFile string
	// Prefix names the store's buckets and subjects; default "wasmtask".
	Prefix string
	// Replicas is how many NATS servers keep each bucket. Zero: the
	// cluster's size, at most 3 (1 for a store in Dir or on a server
	// without a cluster). A bucket that has more keeps them; one that has
	// fewer is raised, or the start fails saying so.
	Replicas int
}

// NewStoreKeys returns the text of a new key file for StoreConfig.KeysFile.
func NewStoreKeys() string { return natsstore.NewKeyFile() }

// localStoreKeys returns the key file of an embedded store in dir,
// DIR/store.keys, creating the directory (0700) and a new key file (0600)
// when they do not exist.
func localStoreKeys(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("host: task store: %w", err)
	}
	p := filepath.Join(dir, "store.keys")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return p, nil
	case err != nil:
		return "", fmt.Errorf("host: task store keys: %w", err)
	}
	_, err = f.WriteString(NewStoreKeys())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p)
		return "", fmt.Errorf("host: task store keys: %w", err)
	}
	return p, nil
}

// openStore opens the store cfg selects and sets tasks up to share it, or
// returns nil when cfg selects none.
func openStore(ctx context.Context, cfg StoreConfig, tasks *taskengine.Config, log *slog.Logger) (*natsstore.Store, error) {
	if cfg.URL == "" && cfg.Dir == "" {
		return nil, nil
	}
	if cfg.KeysFile == "" && cfg.URL != "" {
		return nil, fmt.Errorf("host: a shared task store needs a key file, the same on every replica: wasmtask store-keys > store.keys && chmod 600 store.keys, then --store-keys store.keys")
	}
	if cfg.KeysFile == "" {
		var err error
		if cfg.KeysFile, err = localStoreKeys(cfg.Dir); err != nil {
			return nil, err
		}
	}
	f, err := os.Open(cfg.KeysFile)
	if err != nil {
		return nil, fmt.Errorf("host: task store keys: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Mode().Perm()&0o077 != 0 {
		err = fmt.Errorf("group or others may read it (mode %v): chmod 600 %s", fi.Mode().Perm(), cfg.KeysFile)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("host: task store keys %s: %w", cfg.KeysFile, err)
	}
	keys, err := natsstore.ParseKeys(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("host: task store keys %s: %w", cfg.KeysFile, err)
	}
	st, err := natsstore.Open(ctx, natsstore.Config{URL: cfg.URL, Dir: cfg.Dir, Keys: keys, Prefix: cfg.Prefix, Replicas: cfg.Replicas, Log: log})
	if err != nil {
		return nil, fmt.Errorf("host: task store: %w", err)
	}
	tasks.Shared, tasks.Peers, tasks.Codec, tasks.SharedKey = st, st, taskcodec.New(), keys.Index
	return st, nil
}

// roundStateKey is the key that seals 2026-07-28 input rounds' requestState,
// derived from the shared store's index key: replicas that share tasks
// open each other's states too. Without a shared store, nil: a key of
// this process.
func roundStateKey(index []byte) []byte {
	if index == nil {
		return nil
	}
	h := hmac.New(sha256.New, index)
	h.Write([]byte("wasmtask requestState key v1"))
	return h.Sum(nil)
}
