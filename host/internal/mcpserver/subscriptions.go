package mcpserver

import (
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/wasmtask/wasmtask/host/internal/mcperr"
)

// maxSubscriptions bounds the resources one session (or one
// subscriptions/listen request) subscribes to.
const maxSubscriptions = 256

// subscriptions records which URIs each subscriber (a session, or an open
// subscriptions/listen request) follows, so that a catalog swap can tell
// them which changed. go-sdk keeps its own record to deliver
// notifications/resources/updated; it has no API to read it.
type subscriptions struct {
	mu    sync.Mutex
	by    map[string]map[string]struct{} // subscriber → URIs
	count map[string]int                 // URI → subscribers
}

// add records that key follows uri, refusing past maxSubscriptions.
func (s *subscriptions) add(key, uri string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by, s.count = map[string]map[string]struct{}{}, map[string]int{}
	}
	set := s.by[key]
	if _, ok := set[uri]; ok {
		return nil
	}
	if len(set) >= maxSubscriptions {
		return mcperr.RPC(jsonrpc.CodeInvalidParams, "more than %d resource subscriptions on this session; unsubscribe from one first", maxSubscriptions)
	}
	if set == nil {
		set = map[string]struct{}{}
		s.by[key] = set
	}
	set[uri] = struct{}{}
	s.count[uri]++
	return nil
}

// remove forgets that key follows uri.
func (s *subscriptions) remove(key, uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.by[key][uri]; ok {
		delete(s.by[key], uri)
		s.forgetLocked(uri)
	}
}

// drop forgets every subscription of key (its session or request ended).
func (s *subscriptions) drop(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for uri := range s.by[key] {
		s.forgetLocked(uri)
	}
	delete(s.by, key)
}

func (s *subscriptions) forgetLocked(uri string) {
	if s.count[uri]--; s.count[uri] <= 0 {
		delete(s.count, uri)
	}
}

// uris are the URIs someone follows, sorted.
func (s *subscriptions) uris() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.count))
	for uri := range s.count {
		out = append(out, uri)
	}
	slices.Sort(out)
	return out
}
