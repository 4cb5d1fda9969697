package host

import (
	"net"
	"sync"
)

// limitListener accepts at most n connections open at once: Accept waits
// for one to close past that. A flood of idle or slow connections then
// costs at most n file descriptors; the server's read, idle and write
// timeouts free the places they hold.
type limitListener struct {
	net.Listener
	sem    chan struct{}
	closed chan struct{}
	once   sync.Once
}

func limitConnections(l net.Listener, n int) net.Listener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n), closed: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// Close closes the listener and ends an Accept waiting for a place.
func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}
