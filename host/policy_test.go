package host

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wasmtask/wasmtask/plugins"
)

func TestParsePolicy(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, in string
		wantErr  string // "" = valid
	}{
		{"empty", `{}`, ""},
		{"full", `{"defaults":{"memoryMiB":32,"timeout":"5s","maxOutputBytes":10,"maxLogBytes":10,"maxConcurrency":2,"maxQueue":1},
			"maxInstances":4,"tools":{"t":{"memoryMiB":16}},
			"modules":{"m.wasm":{"digest":"sha256:` + strings.Repeat("0", 64) + `","env":{"A":"1"},"tools":{"t":{"passEnv":["HOME"],"mounts":[{"hostDir":"` + dir + `","guestPath":"/data","write":true}]}}}}}`, ""},
		{"grants by tool name", `{"tools":{"t":{"env":{"A":"1"}}}}`, "granted to a module file, not to a tool name"},
		{"mounts by tool name", `{"tools":{"t":{"mounts":[]}}}`, "granted to a module file"},
		{"module not a file name", `{"modules":{"m":{}}}`, `such as "search.wasm"`},
		{"module path", `{"modules":{"a/m.wasm":{}}}`, `such as "search.wasm"`},
		{"bad digest", `{"modules":{"m.wasm":{"digest":"sha256:xyz"}}}`, "is not \"sha256:\" and 64 hex digits"},
		{"module limits checked", `{"modules":{"m.wasm":{"tools":{"t":{"memoryMiB":999}}}}}`, "modules.m.wasm.tools.t.memoryMiB 999"},
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
	pin := "sha256:" + strings.Repeat("ab", 32)
	p, err := ParsePolicy([]byte(`{
		"defaults": {"timeout": "10s", "env": {"A": "1"}, "maxConcurrency": 2},
		"tools": {
			"big":  {"memoryMiB": 128, "maxQueue": 1}
		},
		"modules": {
			"envy.wasm": {"memoryMiB": 32, "tools": {"envy": {"passEnv": ["HOME", "MISSING"], "env": {"B": "2"}}}},
			"pinned.wasm": {"digest": "` + pin + `", "env": {"C": "3"}}
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
	mod := func(name, digest string) plugins.Module { return plugins.Module{Name: name, Digest: digest} }
	other := "sha256:" + strings.Repeat("cd", 32)
	def := ToolPolicy{MemoryMiB: 64, Timeout: Duration(10 * time.Second), MaxOutputBytes: 1 << 20, MaxLogBytes: 64 << 10, MaxConcurrency: 2, MaxQueue: 8, Env: map[string]string{"A": "1"}}
	for _, tc := range []struct {
		name    string
		module  plugins.Module
		tool    string
		want    ToolPolicy
		wantEnv map[string]string
		pinErr  bool
	}{
		{"defaults", mod("any", other), "other", def, map[string]string{"A": "1"}, false},
		{"limits by tool name", mod("any", other), "big", with(def, func(tp *ToolPolicy) { tp.MemoryMiB, tp.MaxQueue = 128, 1 }), map[string]string{"A": "1"}, false},
		{"grants of the module's tool", mod("envy", other), "envy", with(def, func(tp *ToolPolicy) {
			tp.MemoryMiB, tp.Env, tp.PassEnv = 32, map[string]string{"B": "2"}, []string{"HOME", "MISSING"}
		}), map[string]string{"B": "2", "HOME": "/home/op"}, false},
		{"another module's tool of that name gets none", mod("impostor", other), "envy", def, map[string]string{"A": "1"}, false},
		{"another tool of the module", mod("envy", other), "second", with(def, func(tp *ToolPolicy) { tp.MemoryMiB = 32 }), map[string]string{"A": "1"}, false},
		{"pin matches", mod("pinned", pin), "x", with(def, func(tp *ToolPolicy) { tp.Env = map[string]string{"C": "3"} }), map[string]string{"C": "3"}, false},
		{"pin does not match", mod("pinned", other), "x", def, map[string]string{"A": "1"}, true},
	} {
		got, pinErr := p.forTool(tc.module, tc.tool)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: forTool (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(tc.wantEnv, limitsOf(got, getenv).Env); diff != "" {
			t.Errorf("%s: limitsOf.Env (-want +got):\n%s", tc.name, diff)
		}
		if (pinErr != nil) != tc.pinErr || pinErr != nil && !errors.Is(pinErr, ErrPolicy) {
			t.Errorf("%s: pin error %v, want one: %v", tc.name, pinErr, tc.pinErr)
		}
	}
	// No policy: the built-in defaults, nothing granted.
	got, _ := (*Policy)(nil).forTool(mod("x", other), "x")
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
