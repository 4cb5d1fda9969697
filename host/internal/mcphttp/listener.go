package mcphttp

import (
	"container/list"
	"net"
	"net/http"
	"sync"
)

// ConnLimiter is a listener (of host.Server.Serve) that bounds the connections
// open at once, in total (max) and from one client address (perAddr), and
// makes room for a new client by closing idle keep-alive connections.
//
// Which connections are idle it learns from net/http itself: its ConnState
// method is the http.Server's ConnState hook, so a connection is idle from
// net/http's StateIdle (a response finished, no request begun) until its
// next StateActive, and nothing else is ever closed for room — not a
// connection in StateNew (its first request is coming), not one in
// StateActive (a request in flight, or a response stream such as SSE that
// is open), not a hijacked one.
//
// Accept admits a connection thus:
//
//   - At perAddr connections from its address (see addressKey), the
//     address's own least recently used idle connection is closed; when it
//     has none, the new connection is refused: closed at once, unanswered.
//   - At max connections in total, the least recently used idle
//     connection is closed; when none is idle, Accept keeps the new
//     connection, unserved, until a place frees or a connection becomes
//     idle. Further connections wait in the kernel's backlog meanwhile.
//
// So at most max connections are served, plus the one Accept holds. A
// connection's place is given back when it is closed (by net/http, by its
// hijacker, or by the limiter).
//
// Closing an idle connection races with a request its client may be
// sending at that moment, exactly as net/http's IdleTimeout and Shutdown
// do: HTTP/1.1 clients retry on a closed idle connection (RFC 9112 §9.3.1).
//
// A ConnLimiter is safe for concurrent use; its state is guarded by mu.
type ConnLimiter struct {
	net.Listener
	max     int
	perAddr int                 // <= 0: no per-address bound
	Refused func(addr net.Addr) // told of each refused connection; may be nil; set before Accept

	mu      sync.Mutex
	open    int
	byAddr  map[string]int // open connections by address key: at most max entries
	idle    list.List      // the idle *trackedConn, least recently used first
	waiters int            // Accepts waiting on changed
	changed chan struct{}  // closed and replaced when a place frees or a connection turns idle, if waiters > 0

	closed   chan struct{}
	once     sync.Once
	closeErr error

	// waiting, set by tests, is called when Accept holds a connection and
	// waits for a place (mu is not held).
	waiting func()
}

// trackedConn is a connection a ConnLimiter admitted.
type trackedConn struct {
	net.Conn
	l    *ConnLimiter
	key  string        // its address key; "" when not bounded per address
	elem *list.Element // in l.idle while idle; guarded by l.mu
	gone bool          // its place is given back; guarded by l.mu
}

// LimitConnections bounds the connections l accepts to max open at once,
// and perAddr from one client address (<= 0: no such bound). Serve it
// with an http.Server whose ConnState hook calls the limiter's ConnState.
func LimitConnections(l net.Listener, max, perAddr int) *ConnLimiter {
	return &ConnLimiter{Listener: l, max: max, perAddr: perAddr, byAddr: map[string]int{},
		changed: make(chan struct{}), closed: make(chan struct{})}
}

// Accept accepts a connection and admits it as the type's documentation
// says; a refused connection is closed and Accept goes on to the next.
func (l *ConnLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc, err := l.admit(c)
		if err != nil {
			return nil, err
		}
		if tc != nil {
			return tc, nil
		}
	}
}

// admit admits c, closing an idle connection to make room if it must, or
// refuses it (nil, nil), or waits for a place while every connection is
// busy. It returns net.ErrClosed, with c closed, when the listener closes.
func (l *ConnLimiter) admit(c net.Conn) (*trackedConn, error) {
	key := ""
	if l.perAddr > 0 {
		key = addressKey(c.RemoteAddr())
	}
	l.mu.Lock()
	for {
		var victim *trackedConn
		if key != "" && l.byAddr[key] >= l.perAddr {
			if victim = l.leastRecentlyIdle(key); victim == nil {
				l.mu.Unlock()
				c.Close()
				if l.Refused != nil {
					l.Refused(c.RemoteAddr())
				}
				return nil, nil
			}
			l.drop(victim)
		}
		if l.open >= l.max && victim == nil {
			if victim = l.leastRecentlyIdle(""); victim != nil {
				l.drop(victim)
			}
		}
		if l.open < l.max {
			tc := &trackedConn{Conn: c, l: l, key: key}
			l.open++
			if key != "" {
				l.byAddr[key]++
			}
			l.mu.Unlock()
			if victim != nil {
				victim.Conn.Close()
			}
			return tc, nil
		}
		// Every connection is busy: wait for a change, holding c.
		ch := l.changed
		l.waiters++
		l.mu.Unlock()
		if l.waiting != nil {
			l.waiting()
		}
		select {
		case <-ch:
		case <-l.closed:
			c.Close()
			l.mu.Lock()
			l.waiters--
			l.mu.Unlock()
			return nil, net.ErrClosed
		}
		l.mu.Lock()
		l.waiters--
	}
}

// leastRecentlyIdle is the connection idle the longest, from the address
// key when key is not "", or nil. mu is held. Its cost is bounded by the
// idle connections, at most max.
func (l *ConnLimiter) leastRecentlyIdle(key string) *trackedConn {
	for e := l.idle.Front(); e != nil; e = e.Next() {
		if tc := e.Value.(*trackedConn); key == "" || tc.key == key {
			return tc
		}
	}
	return nil
}

// drop gives tc's place back. mu is held.
func (l *ConnLimiter) drop(tc *trackedConn) {
	if tc.elem != nil {
		l.idle.Remove(tc.elem)
		tc.elem = nil
	}
	tc.gone = true
	l.open--
	if tc.key != "" {
		if l.byAddr[tc.key]--; l.byAddr[tc.key] == 0 {
			delete(l.byAddr, tc.key)
		}
	}
}

// notify wakes the waiting Accepts. mu is held.
func (l *ConnLimiter) notify() {
	if l.waiters > 0 {
		close(l.changed)
		l.changed = make(chan struct{})
	}
}

// ConnState is the http.Server's ConnState hook: it keeps the idle list.
func (l *ConnLimiter) ConnState(c net.Conn, st http.ConnState) {
	tc, ok := c.(*trackedConn)
	if !ok || tc.l != l {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if tc.gone {
		return
	}
	if tc.elem != nil {
		l.idle.Remove(tc.elem)
		tc.elem = nil
	}
	if st == http.StateIdle {
		tc.elem = l.idle.PushBack(tc) // the most recently used
		l.notify()
	}
}

// Close closes the connection and gives its place back (once).
func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	l := c.l
	l.mu.Lock()
	if !c.gone {
		l.drop(c)
		l.notify()
	}
	l.mu.Unlock()
	return err
}

// Close closes the listener and ends an Accept waiting for a place. Only
// the first call closes; later ones return its error.
func (l *ConnLimiter) Close() error {
	l.once.Do(func() {
		l.closeErr = l.Listener.Close()
		close(l.closed)
	})
	return l.closeErr
}

// addressKey is the client address a connection counts against for the
// per-address bound: an IPv4 address, or an IPv6 address's /64 prefix
// (one host is commonly given a whole /64, and can pick any address in
// it). It is "" — no per-address bound — for an address that is not IP
// (a Unix socket's peers have none to tell apart).
func addressKey(a net.Addr) string {
	var ip net.IP
	switch a := a.(type) {
	case *net.TCPAddr:
		ip = a.IP
	default:
		return ""
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	if len(ip) != net.IPv6len {
		return ""
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
