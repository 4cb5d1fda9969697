package host

import (
	"context"
	"fmt"
	"os"

	"github.com/wasmtask/wasmtask/host/internal/mcpserver"
	"github.com/wasmtask/wasmtask/host/internal/natsstore"
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
	// KeysFile is the operator's key file (required): the same on every
	// replica. `wasmtask store-keys` writes a new one.
	KeysFile string
	// Prefix names the store's buckets and subjects; default "wasmtask".
	Prefix string
}

// NewStoreKeys returns the text of a new key file for StoreConfig.KeysFile.
func NewStoreKeys() string { return natsstore.NewKeyFile() }

// openStore opens the store cfg selects and sets tasks up to share it, or
// returns nil when cfg selects none.
func openStore(ctx context.Context, cfg StoreConfig, tasks *taskengine.Config) (*natsstore.Store, error) {
	if cfg.URL == "" && cfg.Dir == "" {
		return nil, nil
	}
	if cfg.KeysFile == "" {
		return nil, fmt.Errorf("host: a task store needs a key file")
	}
	f, err := os.Open(cfg.KeysFile)
	if err != nil {
		return nil, fmt.Errorf("host: task store keys: %w", err)
	}
	keys, err := natsstore.ParseKeys(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("host: task store keys %s: %w", cfg.KeysFile, err)
	}
	st, err := natsstore.Open(ctx, natsstore.Config{URL: cfg.URL, Dir: cfg.Dir, Keys: keys, Prefix: cfg.Prefix})
	if err != nil {
		return nil, fmt.Errorf("host: task store: %w", err)
	}
	tasks.Shared, tasks.Peers, tasks.Codec, tasks.SharedKey = st, st, mcpserver.Codec(), keys.Index
	return st, nil
}
