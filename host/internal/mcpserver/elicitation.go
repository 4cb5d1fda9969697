package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
)

// Elicitation: a running tool asks the user for input. A plain call sends
// elicitation/create on its own request's stream; a task's input requests
// wait in the engine (the task is input_required) and a waiting
// tasks/result delivers them.

// elicitAnswer is what an input request of a task is answered with.
type elicitAnswer struct {
	reply abi.ElicitReply
	err   error
}

// deliverInputs sends each pending input request of the task that no other
// waiter is delivering as an elicitation/create with the related-task _meta,
// and answers the task with the client's reply. Delivery goroutines belong
// to the calling waitTask (wg), and end with ctx.
func (s *Server) deliverInputs(ctx context.Context, rq requestor, owner, id string, wg *sync.WaitGroup) {
	reqs, err := s.cfg.Engine.PendingInput(ctx, owner, id)
	if err != nil {
		return
	}
	for _, r := range reqs {
		key := id + "\x00" + r.ID
		s.mu.Lock()
		busy := s.inflight[key]
		s.inflight[key] = true
		s.mu.Unlock()
		if busy {
			continue
		}
		wg.Go(func() {
			defer func() {
				s.mu.Lock()
				delete(s.inflight, key)
				s.mu.Unlock()
			}()
			req, _ := r.Payload.(abi.ElicitRequest)
			ans := s.elicit(ctx, rq.ss, id, req)
			if ans.err != nil && ctx.Err() != nil {
				return // the waiter left; the next tasks/result delivers it again
			}
			// An answer received is delivered even if the waiter leaves now
			// (the engine's SharedTimeout still caps it).
			_ = s.cfg.Engine.Answer(context.WithoutCancel(ctx), owner, id, r.ID, ans)
		})
	}
}

// elicit sends one elicitation/create to the client and waits for the reply.
func (s *Server) elicit(ctx context.Context, ss *mcp.ServerSession, taskID string, req abi.ElicitRequest) elicitAnswer {
	params := &mcp.ElicitParams{Mode: "form", Message: req.Message}
	if len(req.RequestedSchema) > 0 {
		params.RequestedSchema = req.RequestedSchema
	}
	if taskID != "" {
		params.Meta = relatedMeta(taskID)
	}
	res, err := ss.Elicit(ctx, params)
	if err != nil {
		return elicitAnswer{err: fmt.Errorf("elicitation failed: %w", err)}
	}
	reply := abi.ElicitReply{Action: res.Action}
	if res.Content != nil {
		if b, err := json.Marshal(res.Content); err == nil {
			reply.Content = b
		}
	}
	// go-sdk checked the answer against the schema already; the check
	// every era shares (mcpwire.CheckAnswer) goes further. A response cannot be
	// refused: the question fails.
	reply, err = mcpwire.CheckAnswer(req, reply)
	if err != nil {
		return elicitAnswer{err: fmt.Errorf("elicitation failed: %w", err)}
	}
	return elicitAnswer{reply: reply}
}

// clientCanElicit reports whether the session's client declared the
// elicitation capability.
func clientCanElicit(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil
}

// Per-session bounds on elicitation, on top of the runtime's per-call ones:
// a client is one user, and every call and task of its session asks that
// user. At most maxOpenElicits questions wait for an answer at once, and
// new ones start at most sessionElicitBurst at a time, then one every
// sessionElicitEvery.
const (
	maxOpenElicits     = 4
	sessionElicitBurst = 8
	sessionElicitEvery = 2 * time.Second
)

var (
	errElicitsOpen error = elicitLimit(fmt.Sprintf("this session already has %d input requests waiting for the user", maxOpenElicits))
	errElicitRate  error = elicitLimit("this session's input requests are too frequent")
)

// elicitLimit is an input request refused by a limit: errors.Is finds
// abi.ErrElicitLimit (the guest gets its code), the text is the reason.
type elicitLimit string

func (e elicitLimit) Error() string        { return string(e) }
func (e elicitLimit) Is(target error) bool { return target == abi.ErrElicitLimit }

// elicitLimiter is one session's elicitation bounds: a count of open
// questions and a token bucket. The zero value is ready: a full bucket.
type elicitLimiter struct {
	mu     sync.Mutex
	open   int
	used   float64 // tokens taken and not yet refilled
	refill time.Time
}

// begin admits one question at now, or says which bound refuses it. An
// admitted question is ended with end.
func (l *elicitLimiter) begin(now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= maxOpenElicits {
		return errElicitsOpen
	}
	if !l.refill.IsZero() {
		l.used = max(0, l.used-float64(now.Sub(l.refill))/float64(sessionElicitEvery))
	}
	l.refill = now
	if l.used+1 > sessionElicitBurst {
		return errElicitRate
	}
	l.used++
	l.open++
	return nil
}

func (l *elicitLimiter) end() {
	l.mu.Lock()
	l.open--
	l.mu.Unlock()
}
