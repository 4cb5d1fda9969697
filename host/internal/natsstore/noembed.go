//go:build wasmtask_noembed

package natsstore

import "errors"

// ErrNoEmbedded is the error of a store on a directory in a build
// without the embedded server (tag wasmtask_noembed).
var ErrNoEmbedded = errors.New("task store: this build leaves out the embedded NATS server (built with -tags wasmtask_noembed): give the store a nats:// URL")

func startEmbedded(string) (embeddedServer, error) { return nil, ErrNoEmbedded }
