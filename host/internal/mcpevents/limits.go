package mcpevents

import (
	"fmt"
	"sync"
	"time"

	"github.com/wasmtask/wasmtask/abi"
)

// Per-session bounds on elicitation, on top of the runtime's per-call ones:
// a client is one user, and every call and task of its session asks that
// user. At most MaxOpenElicits questions wait for an answer at once, and
// new ones start at most SessionElicitBurst at a time, then one every
// SessionElicitEvery.
const (
	MaxOpenElicits     = 4
	SessionElicitBurst = 8
	SessionElicitEvery = 2 * time.Second
)

var (
	errElicitsOpen error = elicitLimit(fmt.Sprintf("this session already has %d input requests waiting for the user", MaxOpenElicits))
	errElicitRate  error = elicitLimit("this session's input requests are too frequent")
)

// elicitLimit is an input request refused by a limit: errors.Is finds
// abi.ErrElicitLimit (the guest gets its code), the text is the reason
// (for the server log: the guest learns only the code).
type elicitLimit string

func (e elicitLimit) Error() string        { return string(e) }
func (e elicitLimit) Is(target error) bool { return target == abi.ErrElicitLimit }

// Limiter is one session's elicitation bounds: a count of open questions
// and a token bucket. The zero value is ready: a full bucket. It is safe
// for concurrent use.
type Limiter struct {
	mu     sync.Mutex
	open   int
	used   float64 // tokens taken and not yet refilled
	refill time.Time
}

// begin admits one question at now, or says which bound refuses it. An
// admitted question is ended with end.
func (l *Limiter) begin(now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= MaxOpenElicits {
		return errElicitsOpen
	}
	if !l.refill.IsZero() {
		l.used = max(0, l.used-float64(now.Sub(l.refill))/float64(SessionElicitEvery))
	}
	l.refill = now
	if l.used+1 > SessionElicitBurst {
		return errElicitRate
	}
	l.used++
	l.open++
	return nil
}

func (l *Limiter) end() {
	l.mu.Lock()
	l.open--
	l.mu.Unlock()
}
