package host

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParsePolicy(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, in string
		wantErr  string // "" = valid
	}{
		{"empty", `{}`, ""},
		{"full", `{"defaults":{"memoryMiB":32,"timeout":"5s","maxOutputBytes":10,"maxLogBytes":10,"maxConcurrency":2,"maxQueue":1},
			"maxInstances":4,"tools":{"t":{"env":{"A":"1"},"passEnv":["HOME"],"mounts":[{"hostDir":"` + dir + `","guestPath":"/data","write":true}]}}}`, ""},
		{"not json", `nope`, "invalid character"},
		{"unknown field", `{"defaults":{"memoryMB":32}}`, `unknown field "memoryMB"`},
		{"trailing", `{} {}`, "trailing data"},
		{"bad duration", `{"defaults":{"timeout":"soon"}}`, "invalid duration"},
		{"numeric duration", `{"defaults":{"timeout":5}}`, "duration must be a string"},
		{"negative timeout", `{"defaults":{"timeout":"-1s"}}`, "timeout is negative"},
		{"memory too large", `{"tools":{"t":{"memoryMiB":1024}}}`, "tools.t.memoryMiB 1024 is outside 0..256"},
		{"negative limit", `{"defaults":{"maxQueue":-1}}`, "must not be negative"},
		{"negative instances", `{"maxInstances":-1}`, "maxInstances is negative"},
		{"bad env name", `{"defaults":{"env":{"A=B":"x"}}}`, "invalid variable name"},
		{"relative host dir", `{"defaults":{"mounts":[{"hostDir":"data","guestPath":"/d"}]}}`, "is not an absolute path"},
		{"relative guest path", `{"defaults":{"mounts":[{"hostDir":"` + dir + `","guestPath":"d"}]}}`, "is not an absolute path"},
		{"missing host dir", `{"defaults":{"mounts":[{"hostDir":"` + dir + `/nope","guestPath":"/d"}]}}`, "no such file"},
		{"twice", `{"defaults":{"mounts":[{"hostDir":"` + dir + `","guestPath":"/d"},{"hostDir":"` + dir + `","guestPath":"/d"}]}}`, "mounted twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePolicy([]byte(tc.in))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				return
			}
			if !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got error %v, want ErrPolicy containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestPolicyForTool(t *testing.T) {
	p, err := ParsePolicy([]byte(`{
		"defaults": {"timeout": "10s", "env": {"A": "1"}, "maxConcurrency": 2},
		"tools": {
			"big":  {"memoryMiB": 128, "maxQueue": 1},
			"envy": {"passEnv": ["HOME", "MISSING"], "env": {"B": "2"}}
		}}`))
	if err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) (string, bool) {
		if k == "HOME" {
			return "/home/op", true
		}
		return "", false
	}
	def := ToolPolicy{MemoryMiB: 64, Timeout: Duration(10 * time.Second), MaxOutputBytes: 1 << 20, MaxLogBytes: 64 << 10, MaxConcurrency: 2, MaxQueue: 8}
	for _, tc := range []struct {
		tool    string
		want    ToolPolicy
		wantEnv map[string]string
	}{
		{"other", with(def, func(tp *ToolPolicy) { tp.Env = map[string]string{"A": "1"} }), map[string]string{"A": "1"}},
		{"big", with(def, func(tp *ToolPolicy) { tp.MemoryMiB, tp.MaxQueue, tp.Env = 128, 1, map[string]string{"A": "1"} }), map[string]string{"A": "1"}},
		{"envy", with(def, func(tp *ToolPolicy) {
			tp.Env, tp.PassEnv = map[string]string{"B": "2"}, []string{"HOME", "MISSING"}
		}), map[string]string{"B": "2", "HOME": "/home/op"}},
	} {
		got := p.forTool(tc.tool)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("forTool(%q) (-want +got):\n%s", tc.tool, diff)
		}
		if diff := cmp.Diff(tc.wantEnv, limitsOf(got, getenv).Env); diff != "" {
			t.Errorf("limitsOf(%q).Env (-want +got):\n%s", tc.tool, diff)
		}
	}
	// No policy: the built-in defaults, nothing granted.
	got := (*Policy)(nil).forTool("x")
	lim := limitsOf(got, getenv)
	if got.MemoryMiB != DefaultMemoryMiB || got.Timeout.std() != DefaultTimeout || lim.Env != nil || lim.Mounts != nil {
		t.Errorf("nil policy: got %+v, want defaults with no env or mounts", got)
	}
}

func with(tp ToolPolicy, f func(*ToolPolicy)) ToolPolicy {
	f(&tp)
	return tp
}

func TestGateBoundsRunningAndQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(1, 1)
		ctx := context.Background()
		if err := g.enter(ctx); err != nil {
			t.Fatalf("first enter: %v", err)
		}
		queued := make(chan error, 1)
		go func() { queued <- g.enter(ctx) }()
		synctest.Wait() // the second caller is blocked: queued
		if n := g.waiting.Load(); n != 1 {
			t.Fatalf("got %d callers waiting, want 1", n)
		}
		if err := g.enter(ctx); !errors.Is(err, ErrBusy) {
			t.Fatalf("third enter: got %v, want ErrBusy", err)
		}
		g.leave()
		if err := <-queued; err != nil {
			t.Fatalf("queued enter: got %v, want a slot", err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := g.enter(cctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("enter with a done context while full: got %v, want context.Canceled", err)
		}
		g.leave()
	})
}
