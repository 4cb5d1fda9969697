//go:build wasmtask_noembed

package natsstore

import (
	"context"
	"errors"
	"testing"
)

// A build without the embedded server refuses a store on a directory with
// an error that says why, and starts nothing.
func TestNoEmbedded(t *testing.T) {
	s, err := Open(context.Background(), Config{Dir: t.TempDir(), Keys: testKeys(t, NewKeyFile())})
	if !errors.Is(err, ErrNoEmbedded) || s != nil {
		t.Fatalf("Open(Dir) = %v, %v; want ErrNoEmbedded", s, err)
	}
}
