package sandbox_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
)

// counting counts what one call sends towards its client.
type counting struct {
	mu                    sync.Mutex
	progress, status, log int
	lastLog               string
}

func (c *counting) Progress(float64, float64, string) { c.mu.Lock(); c.progress++; c.mu.Unlock() }
func (c *counting) Status(string)                     { c.mu.Lock(); c.status++; c.mu.Unlock() }
func (c *counting) Log(_ int32, msg string) {
	c.mu.Lock()
	c.log++
	c.lastLog = msg
	c.mu.Unlock()
}
func (c *counting) Elicit(context.Context, abi.ElicitRequest) (abi.ElicitReply, error) {
	return abi.ElicitReply{Action: "decline"}, nil
}

func (c *counting) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.progress + c.status + c.log
}

// TestHostCallFloods runs guests that loop over host calls whose work they
// choose (vectored writes of a million empty entries, empty log, progress
// and status messages, empty stderr lines, random_get of their whole
// memory): each call ends with its timeout or its output limit, the server
// still serves, and the notifications the call sent are bounded by the
// burst and rate of the host (notifyBurst 32, notifyRate 20/s in wasmrt),
// counted against the call's own measured duration, plus the final notice.
func TestHostCallFloods(t *testing.T) {
	tools := map[string]host.GuestErrorKind{
		"a_out":      host.KindOutputTooLarge,
		"b_err":      host.KindTimeout,
		"c_log":      host.KindTimeout,
		"d_progress": host.KindTimeout,
		"e_status":   host.KindTimeout,
		"f_random":   host.KindTimeout,
		"g_lines":    host.KindTimeout,
	}
	overrides := map[string]host.ToolPolicy{}
	for name := range tools {
		overrides[name] = host.ToolPolicy{Timeout: runaway}
	}
	onEngines(t, func(t *testing.T, e engine) {
		hostile(t, e, policy(map[string]host.ModulePolicy{"flood": {Tools: overrides}}), "flood", func(t *testing.T, s *host.Server) {
			for name, kind := range tools {
				ev := &counting{}
				start := time.Now()
				_, err := s.Call(context.Background(), name, nil, ev)
				ran := time.Since(start)
				guestErr(t, err, kind)
				limit := 32 + int(20*ran.Seconds()) + 3
				if n := ev.total(); n > limit {
					t.Errorf("%s: %d notifications in %v, want at most %d", name, n, ran, limit)
				}
				if ev.total() > 0 && strings.HasPrefix(name, "c") && !strings.Contains(ev.lastLog, "dropped") && !strings.Contains(ev.lastLog, "log limit") {
					t.Errorf("%s: the last log message %q does not say what was dropped", name, ev.lastLog)
				}
				t.Logf("%s: %v, %d notifications (progress %d, status %d, log %d)", name, ran.Round(time.Millisecond), ev.total(), ev.progress, ev.status, ev.log)
			}
		})
	})
}
