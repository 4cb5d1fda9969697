package mcpserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPPath is where HTTPHandler serves MCP.
const HTTPPath = "/mcp"

const sessionIDHeader = "Mcp-Session-Id"

// HTTPHandler returns the Streamable HTTP handler, serving MCP at /mcp (other
// paths get 404). Sessions are stateful (Mcp-Session-Id). It wraps go-sdk's
// handler to lift params.task out of tools/call POST bodies and to release a
// session's blocked requests when the client deletes the session.
// notifications/tasks/status is not sent over HTTP (go-sdk offers no way to
// write a custom notification); clients poll with tasks/get.
func (s *Server) HTTPHandler() http.Handler {
	s.httpOnce.Do(func() {
		timeout := s.cfg.SessionTimeout
		if timeout < 0 {
			timeout = 0
		}
		s.http = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
			Logger:         s.log,
			SessionTimeout: timeout,
			// serveHTTP enforces MaxMessageBytes on what the client sent;
			// lifting params.task into _meta then adds a few bytes per
			// message, which must not turn an accepted body into a 413.
			MaxRequestBodyBytes: 2*int64(s.cfg.MaxMessageBytes) + 4096,
		})
	})
	mux := http.NewServeMux()
	mux.Handle(HTTPPath, http.HandlerFunc(s.serveHTTP))
	return mux
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxMessageBytes)))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "failed to read body", http.StatusBadRequest)
			return
		}
		body = liftBody(body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	case http.MethodDelete:
		// go-sdk closes the session while holding the DELETE, and closing
		// waits for in-flight requests: release our blocked ones first, but
		// only for the user the session belongs to.
		if id := r.Header.Get(sessionIDHeader); id != "" && s.sessionUserMatches(id, r) {
			s.releaseSession(id)
		}
	}
	s.http.ServeHTTP(w, r)
}

func (s *Server) sessionUserMatches(id string, r *http.Request) bool {
	s.mu.Lock()
	sess, ok := s.sessions[id]
	s.mu.Unlock()
	if !ok {
		return false
	}
	var user string
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		user = ti.UserID
	}
	return sess.user == user
}
