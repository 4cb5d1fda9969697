//go:build !wasmtask_noembed

package natsstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startEmbedded starts a NATS server with JetStream in this process,
// storing in dir and listening on no port (clients connect in process).
func startEmbedded(dir string) (embeddedServer, error) {
	srv, err := server.NewServer(&server.Options{
		JetStream: true, StoreDir: dir, DontListen: true, NoSigs: true, NoLog: true,
		ServerName: "wasmtask-embedded",
	})
	if err != nil {
		return nil, fmt.Errorf("task store: embedded server: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("task store: embedded server did not start")
	}
	return srv, nil
}
