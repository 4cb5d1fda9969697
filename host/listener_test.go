package host

import (
	"errors"
	"net"
	"testing"
	"testing/synctest"
)

// pipeListener hands out one end of a net.Pipe per Accept.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
}

func (p *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.closed:
		return nil, net.ErrClosed
	}
}
func (p *pipeListener) Close() error   { close(p.closed); return nil }
func (p *pipeListener) Addr() net.Addr { return &net.TCPAddr{} }

// At most n connections are open; Accept waits for one to close, and
// Close ends a waiting Accept.
func TestLimitConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &pipeListener{conns: make(chan net.Conn, 4), closed: make(chan struct{})}
		for range 4 {
			c, _ := net.Pipe()
			inner.conns <- c
		}
		l := limitConnections(inner, 2)
		a, _ := l.Accept()
		if _, err := l.Accept(); err != nil {
			t.Fatal(err)
		}
		third := make(chan error, 1)
		go func() { _, err := l.Accept(); third <- err }()
		synctest.Wait()
		select {
		case <-third:
			t.Fatal("a third connection was accepted while two were open")
		default:
		}
		a.Close()
		a.Close() // closing twice frees one place
		if err := <-third; err != nil {
			t.Fatalf("Accept after a close: %v", err)
		}
		blocked := make(chan error, 1)
		go func() { _, err := l.Accept(); blocked <- err }()
		synctest.Wait()
		select {
		case <-blocked:
			t.Fatal("a closed connection freed two places")
		default:
		}
		l.Close()
		if err := <-blocked; !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept waiting at Close: %v, want net.ErrClosed", err)
		}
	})
}
