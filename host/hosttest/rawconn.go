package hosttest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// RawConn is one HTTP/1.1 keep-alive connection driven by hand, for tests
// of what a server does to its connections (which it keeps, which it
// closes): requests are written and responses read one at a time.
type RawConn struct {
	net.Conn
	br *bufio.Reader
}

// NewRawConn wraps c. Its reads and writes end at the test binary's
// deadline, if it has one: a connection the server wrongly keeps waiting
// then fails the test, with the test's own message, instead of hanging it.
func NewRawConn(t testing.TB, c net.Conn) *RawConn {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			_ = c.SetDeadline(dl.Add(-time.Until(dl) / 10))
		}
	}
	return &RawConn{Conn: c, br: bufio.NewReader(c)}
}

// Get sends a keep-alive GET of path.
func (c *RawConn) Get(t testing.TB, path string) {
	t.Helper()
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: test\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
}

// Response reads one response and its body: "200 ok", say.
func (c *RawConn) Response() (string, error) {
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b), err
}

// ResponseAsync reads one response on a goroutine, which ends with the
// read.
func (c *RawConn) ResponseAsync() <-chan string {
	ch := make(chan string, 1)
	go func() {
		got, err := c.Response()
		if err != nil {
			got = "error: " + err.Error()
		}
		ch <- got
	}()
	return ch
}

// Fetch sends GET path and returns its response.
func (c *RawConn) Fetch(t testing.TB, path string) string {
	t.Helper()
	c.Get(t, path)
	got, err := c.Response()
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return got
}

// ClosedByServer reports whether the server closed c without answering
// more: reading gives end of file or a reset, and no bytes.
func (c *RawConn) ClosedByServer() error {
	n, err := c.br.Read(make([]byte, 1))
	if n > 0 || err == nil {
		return fmt.Errorf("read %d bytes, want none", n)
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("read: %v, want end of file or a reset", err)
	}
	return nil
}
