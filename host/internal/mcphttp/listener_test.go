package mcphttp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// connHarness serves a ConnLimiter on a real loopback listener with an
// http.Server whose ConnState feeds the limiter, as Serve does. /ok
// answers at once; /hold/{id} answers when the test releases id. The test
// follows the server's view of each connection through ConnState events,
// keyed by the client's local address.
type connHarness struct {
	t      *testing.T
	lim    *ConnLimiter
	addr   string
	served chan error

	mu     sync.Mutex
	states map[string][]http.ConnState
	conns  map[string]*trackedConn // the server's side of each client connection
	holds  map[string]chan struct{}
	change chan struct{} // closed and replaced at every event

	waiting chan struct{} // a token each time Accept holds a connection and waits
	refused chan string   // the client address of each refused connection
}

func newConnHarness(t *testing.T, max, perAddr int) *connHarness {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &connHarness{t: t, lim: LimitConnections(l, max, perAddr), addr: l.Addr().String(), served: make(chan error, 1),
		states: map[string][]http.ConnState{}, conns: map[string]*trackedConn{}, holds: map[string]chan struct{}{},
		change: make(chan struct{}), waiting: make(chan struct{}, 16), refused: make(chan string, 16)}
	h.lim.waiting = func() {
		select {
		case h.waiting <- struct{}{}:
		default: // a token is there already
		}
	}
	h.lim.Refused = func(a net.Addr) { h.refused <- a.String() }
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("GET /hold/{id}", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-h.hold(r.PathValue("id")):
			io.WriteString(w, "held")
		case <-r.Context().Done():
		}
	})
	hs := &http.Server{Handler: mux, ConnState: func(c net.Conn, st http.ConnState) {
		h.lim.ConnState(c, st)
		h.mu.Lock()
		defer h.mu.Unlock()
		k := c.RemoteAddr().String()
		h.states[k] = append(h.states[k], st)
		if tc, ok := c.(*trackedConn); ok {
			h.conns[k] = tc
		}
		close(h.change)
		h.change = make(chan struct{})
	}}
	go func() { h.served <- hs.Serve(h.lim) }()
	t.Cleanup(func() {
		hs.Close()
		<-h.served
	})
	return h
}

// hold is the channel that releases the requests /hold/id.
func (h *connHarness) hold(id string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.holds[id]
	if ch == nil {
		ch = make(chan struct{})
		h.holds[id] = ch
	}
	return ch
}

func (h *connHarness) release(id string) { close(h.hold(id)) }

// await waits until the server has seen client connection c reach st.
func (h *connHarness) await(c *hosttest.RawConn, st http.ConnState) {
	h.t.Helper()
	k := c.LocalAddr().String()
	for {
		h.mu.Lock()
		ch, states := h.change, h.states[k]
		h.mu.Unlock()
		if len(states) > 0 && states[len(states)-1] == st {
			return
		}
		if len(states) > 0 && states[len(states)-1] == http.StateClosed {
			h.t.Fatalf("connection %s closed while the test waited for %v", k, st)
		}
		<-ch
	}
}

// gone reports, for each client connection, whether the limiter has given
// its place back (closed it, or seen it closed).
func (h *connHarness) gone(cs ...*hosttest.RawConn) []bool {
	h.t.Helper()
	var out []bool
	for _, c := range cs {
		h.mu.Lock()
		tc := h.conns[c.LocalAddr().String()]
		h.mu.Unlock()
		if tc == nil {
			h.t.Fatalf("connection %s: the server never saw it", c.LocalAddr())
		}
		h.lim.mu.Lock()
		out = append(out, tc.gone)
		h.lim.mu.Unlock()
	}
	return out
}

// dial connects to h from source address src ("": the default).
func (h *connHarness) dial(src string) *hosttest.RawConn {
	h.t.Helper()
	var d net.Dialer
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	c, err := d.Dial("tcp", h.addr)
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		h.t.Skipf("source address %s is not available here: %v", src, err)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	return hosttest.NewRawConn(h.t, c)
}

// At the bound, a new client is served at once by closing the connection
// idle the longest; a connection with a request in flight is never closed,
// even when it is the oldest.
func TestConnLimitClosesLeastRecentlyIdle(t *testing.T) {
	h := newConnHarness(t, 3, 0)
	busy := h.dial("")
	busy.Get(t, "/hold/busy")
	h.await(busy, http.StateActive)
	idle1, idle2 := h.dial(""), h.dial("")
	for _, c := range []*hosttest.RawConn{idle1, idle2} {
		if got := c.Fetch(t, "/ok"); got != "200 ok" {
			t.Fatalf("GET /ok: %q", got)
		}
		h.await(c, http.StateIdle)
	}

	// Full: busy, idle1 (idle the longest), idle2.
	newcomer := h.dial("")
	newcomer.Get(t, "/ok")
	select {
	case got := <-newcomer.ResponseAsync():
		if got != "200 ok" {
			t.Fatalf("the new client at the bound: %q, want 200 ok", got)
		}
	case <-h.waiting:
		t.Fatal("the new client waits for a place while two connections are idle")
	}
	if got := h.gone(busy, idle1, idle2); fmt.Sprint(got) != "[false true false]" {
		t.Fatalf("closed (busy, idle1, idle2) = %v, want only idle1, the least recently used", got)
	}
	if err := idle1.ClosedByServer(); err != nil {
		t.Errorf("the connection closed for room, from the client: %v", err)
	}

	// The newcomer's connection is now the most recently used: the next
	// client takes idle2's place.
	h.await(newcomer, http.StateIdle)
	next := h.dial("")
	if got := next.Fetch(t, "/ok"); got != "200 ok" {
		t.Fatalf("the next client: %q", got)
	}
	if got := h.gone(busy, idle2, newcomer); fmt.Sprint(got) != "[false true false]" {
		t.Fatalf("closed (busy, idle2, newcomer) = %v, want only idle2", got)
	}
	h.release("busy")
	if got, err := busy.Response(); got != "200 held" {
		t.Errorf("the busy connection's answer: %q, %v; want 200 held on the connection it was asked on", got, err)
	}
}

// While every connection is busy, Accept holds the new connection without
// closing any; the first to turn idle makes the room for it.
func TestConnLimitWaitsWhileAllBusy(t *testing.T) {
	h := newConnHarness(t, 2, 0)
	a, b := h.dial(""), h.dial("")
	a.Get(t, "/hold/a")
	b.Get(t, "/hold/b")
	h.await(a, http.StateActive)
	h.await(b, http.StateActive)

	c := h.dial("")
	c.Get(t, "/ok")
	answer := c.ResponseAsync()
	<-h.waiting // Accept holds c and waits
	if got := h.gone(a, b); fmt.Sprint(got) != "[false false]" {
		t.Fatalf("closed (a, b) = %v while both are busy, want neither", got)
	}
	select {
	case got := <-answer:
		t.Fatalf("the client beyond the bound was answered (%q) while every connection is busy", got)
	default:
	}

	h.release("b") // b answers and turns idle: it makes the room
	if got, err := b.Response(); got != "200 held" {
		t.Fatalf("b's held request: %q, %v", got, err)
	}
	if got := <-answer; got != "200 ok" {
		t.Fatalf("the waiting client once b turned idle: %q", got)
	}
	if got := h.gone(a, b); fmt.Sprint(got) != "[false true]" {
		t.Fatalf("closed (a, b) = %v, want b, the idle one", got)
	}
	if err := b.ClosedByServer(); err != nil {
		t.Errorf("b after its answer: %v", err)
	}
	h.release("a")
	if got, err := a.Response(); got != "200 held" {
		t.Errorf("a, busy throughout: %q, %v", got, err)
	}
}

// One address holds at most perAddr connections: past it its own idle
// connection is closed, and when all of its connections are busy the new
// one is refused at once; other addresses are not affected.
func TestConnLimitPerAddress(t *testing.T) {
	h := newConnHarness(t, 16, 2)
	a1, a2 := h.dial("127.0.0.1"), h.dial("127.0.0.1")
	a1.Get(t, "/hold/a1")
	h.await(a1, http.StateActive)
	if got := a2.Fetch(t, "/ok"); got != "200 ok" {
		t.Fatal(got)
	}
	h.await(a2, http.StateIdle)

	// A third from the address: its idle one goes.
	a3 := h.dial("127.0.0.1")
	if got := a3.Fetch(t, "/ok"); got != "200 ok" {
		t.Fatalf("a third connection from an address with an idle one: %q", got)
	}
	if got := h.gone(a1, a2); fmt.Sprint(got) != "[false true]" {
		t.Fatalf("closed (a1 busy, a2 idle) = %v, want a2", got)
	}
	a3.Get(t, "/hold/a3")
	h.await(a3, http.StateActive)

	// Both of its connections busy: the next is refused, unanswered.
	a4 := h.dial("127.0.0.1")
	a4.Get(t, "/ok")
	if got := <-h.refused; got != a4.LocalAddr().String() {
		t.Fatalf("refused %s, want %s", got, a4.LocalAddr())
	}
	if err := a4.ClosedByServer(); err != nil {
		t.Errorf("the refused connection: %v", err)
	}

	// Another address is served, on the same listener, at the same time.
	b := h.dial("127.0.0.2")
	if got := b.Fetch(t, "/ok"); got != "200 ok" {
		t.Fatalf("a client of another address: %q", got)
	}
	h.release("a1")
	h.release("a3")
	for _, c := range []*hosttest.RawConn{a1, a3} {
		if got, err := c.Response(); got != "200 held" {
			t.Errorf("%s: %q, %v; want its held answer", c.LocalAddr(), got, err)
		}
	}
	select {
	case got := <-h.refused:
		t.Errorf("refused %s as well, want a4 only", got)
	default:
	}
}

// Close ends an Accept that waits for a place and closes the connection
// it holds; the connections already served go on.
func TestConnLimitCloseWhileWaiting(t *testing.T) {
	h := newConnHarness(t, 1, 0)
	a := h.dial("")
	a.Get(t, "/hold/a")
	h.await(a, http.StateActive)
	b := h.dial("")
	<-h.waiting
	if err := h.lim.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-h.served; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve after Close: %v, want net.ErrClosed", err)
	}
	h.served <- nil // for the cleanup
	if err := b.ClosedByServer(); err != nil {
		t.Errorf("the connection Accept held at Close: %v", err)
	}
	h.release("a")
	if got, err := a.Response(); got != "200 held" {
		t.Errorf("the connection served at Close: %q, %v", got, err)
	}
}

func TestAddressKey(t *testing.T) {
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 4242} }
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{tcp("127.0.0.1"), "127.0.0.1"},
		{tcp("127.0.0.2"), "127.0.0.2"},
		{tcp("::ffff:10.0.0.1"), "10.0.0.1"}, // an IPv4 client of a dual-stack listener
		{tcp("2001:db8::1"), "2001:db8::/64"},
		{tcp("2001:db8::ffff:1"), "2001:db8::/64"}, // the same /64
		{tcp("2001:db8:0:1::1"), "2001:db8:0:1::/64"},
		{tcp("::1"), "::/64"},
		{&net.TCPAddr{}, ""},
		{&net.UnixAddr{Name: "@", Net: "unix"}, ""},
	} {
		if got := addressKey(tc.addr); got != tc.want {
			t.Errorf("addressKey(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
