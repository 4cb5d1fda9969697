package sandbox_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wasmtask/wasmtask/host"
)

// fsTree is a host directory tree for the mount cases:
//
//	outside/secret.txt   "SECRET"           never granted
//	mnt/inside.txt       "inside"           granted
//	mnt/innerlink        -> inside.txt      a link that stays inside
//	mnt/abs              -> <outside>       absolute link out
//	mnt/rel              -> ../outside      relative link out
//	mnt/sub/inside/secret.txt "inside"      target of the flipping link
type fsTree struct{ outside, mnt string }

func newFSTree(t *testing.T) fsTree {
	t.Helper()
	d := t.TempDir()
	ft := fsTree{outside: filepath.Join(d, "outside"), mnt: filepath.Join(d, "mnt")}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(ft.outside, 0o755))
	must(os.MkdirAll(filepath.Join(ft.mnt, "sub", "inside"), 0o755))
	must(os.WriteFile(filepath.Join(ft.outside, "secret.txt"), []byte("SECRET\n"), 0o644))
	must(os.WriteFile(filepath.Join(ft.mnt, "inside.txt"), []byte("inside\n"), 0o644))
	must(os.WriteFile(filepath.Join(ft.mnt, "sub", "inside", "secret.txt"), []byte("inside\n"), 0o644))
	must(os.Symlink("inside.txt", filepath.Join(ft.mnt, "innerlink")))
	must(os.Symlink(ft.outside, filepath.Join(ft.mnt, "abs")))
	must(os.Symlink("../outside", filepath.Join(ft.mnt, "rel")))
	return ft
}

// outsideFiles lists the outside directory: no case may change it.
func (ft fsTree) outsideFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(ft.outside, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			b, _ := os.ReadFile(p)
			out = append(out, strings.TrimPrefix(p, ft.outside)+":"+string(b))
		}
		return nil
	})
	return out
}

func args(kv ...string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// mountPolicy is short for every tool, with mounts granted to the fsprobe
// module.
func mountPolicy(mounts ...host.MountPolicy) *host.Policy {
	return policy(map[string]host.ModulePolicy{"fsprobe": {Grants: host.Grants{Mounts: mounts}}})
}

func TestMountEscapes(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ft := newFSTree(t)
		before := ft.outsideFiles(t)
		pol := mountPolicy(
			host.MountPolicy{HostDir: ft.mnt, GuestPath: "/data"},
			host.MountPolicy{HostDir: ft.mnt, GuestPath: "/rw", Write: true},
		)
		hostile(t, e, pol, "fsprobe", func(t *testing.T, s *host.Server) {
			secret := filepath.Join(ft.outside, "secret.txt")
			for _, tc := range []struct {
				name, tool, args string
				wantOK           bool
				want             string // for wantOK: the answer
			}{
				// Controls: what is granted works.
				{"read inside", "read", args("path", "/data/inside.txt"), true, "ok:inside"},
				{"read through an inner link", "read", args("path", "/data/innerlink"), true, "ok:inside"},
				{"write inside a writable mount", "write", args("path", "/rw/new.txt"), true, "ok:"},
				// Reads that must not leave the mount.
				{"dot-dot", "read", args("path", "/data/../outside/secret.txt"), false, ""},
				{"dot-dot relative", "read", args("path", "../outside/secret.txt"), false, ""},
				{"dot-dot inside the mount", "read", args("path", "/data/sub/../../outside/secret.txt"), false, ""},
				{"absolute host path", "read", args("path", secret), false, ""},
				{"absolute system path", "read", args("path", "/etc/passwd"), false, ""},
				{"absolute link out", "read", args("path", "/data/abs/secret.txt"), false, ""},
				{"relative link out", "read", args("path", "/data/rel/secret.txt"), false, ""},
				{"absolute link out, writable mount", "read", args("path", "/rw/abs/secret.txt"), false, ""},
				// The read-only mount refuses every change.
				{"ro: create", "write", args("path", "/data/created.txt"), false, ""},
				{"ro: overwrite", "write", args("path", "/data/inside.txt"), false, ""},
				{"ro: remove", "remove", args("path", "/data/inside.txt"), false, ""},
				{"ro: mkdir", "mkdir", args("path", "/data/newdir"), false, ""},
				{"ro: symlink", "symlink", args("path", "/data/newlink", "target", "/etc"), false, ""},
				// Writes that must not leave the writable mount.
				{"rw: dot-dot", "write", args("path", "/rw/../outside/pwned.txt"), false, ""},
				{"rw: absolute link out", "write", args("path", "/rw/abs/pwned.txt"), false, ""},
				{"rw: relative link out", "write", args("path", "/rw/rel/pwned.txt"), false, ""},
				{"rw: overwrite through a link", "write", args("path", "/rw/abs/secret.txt"), false, ""},
				{"rw: remove through a link", "remove", args("path", "/rw/rel/secret.txt"), false, ""},
				{"rw: mkdir through a link", "mkdir", args("path", "/rw/abs/dir"), false, ""},
			} {
				t.Run(tc.name, func(t *testing.T) {
					got := text(t, s, tc.tool, tc.args, nil)
					switch {
					case tc.wantOK && got != tc.want:
						t.Errorf("%s %s: got %q, want %q", tc.tool, tc.args, got, tc.want)
					case !tc.wantOK && !strings.HasPrefix(got, "err:"):
						t.Errorf("%s %s: got %q, want a refusal (err:<errno>)", tc.tool, tc.args, got)
					}
				})
			}
			// A link the guest plants itself, then follows.
			t.Run("guest-planted link", func(t *testing.T) {
				got := text(t, s, "symlink", args("path", "/rw/planted", "target", ft.outside), nil)
				t.Logf("symlink /rw/planted -> %s: %s", ft.outside, got)
				if got := text(t, s, "write", args("path", "/rw/planted/pwned.txt"), nil); !strings.HasPrefix(got, "err:") {
					t.Errorf("write through a planted link: got %q, want a refusal", got)
				}
				if got := text(t, s, "read", args("path", "/rw/planted/secret.txt"), nil); !strings.HasPrefix(got, "err:") {
					t.Errorf("read through a planted link: got %q, want a refusal", got)
				}
			})
		})
		if b, err := os.ReadFile(filepath.Join(ft.mnt, "new.txt")); err != nil || string(b) != "pwned\n" {
			t.Errorf("the granted write: file %q, %v; want \"pwned\\n\"", b, err)
		}
		if b, _ := os.ReadFile(filepath.Join(ft.mnt, "inside.txt")); string(b) != "inside\n" {
			t.Errorf("inside.txt changed through the read-only mount: %q", b)
		}
		if diff := cmp.Diff(before, ft.outsideFiles(t)); diff != "" {
			t.Errorf("the directory outside the mounts changed (-before +after):\n%s", diff)
		}
	})
}

// TestMountLinkFlippedDuringCall swaps a link inside the mount between a
// directory inside and one outside while the guest reads through it: the
// guest must never read the outside file (no check-then-use race).
func TestMountLinkFlippedDuringCall(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ft := newFSTree(t)
		flip := filepath.Join(ft.mnt, "flip")
		if err := os.Symlink("sub/inside", flip); err != nil {
			t.Fatal(err)
		}
		pol := mountPolicy(host.MountPolicy{HostDir: ft.mnt, GuestPath: "/data"})
		hostile(t, e, pol, "fsprobe", func(t *testing.T, s *host.Server) {
			stop := make(chan struct{})
			done := make(chan int)
			go func() {
				n := 0
				targets := []string{ft.outside, "../outside", "sub/inside"}
				for {
					select {
					case <-stop:
						done <- n
						return
					default:
					}
					tmp := flip + ".tmp"
					os.Remove(tmp)
					if os.Symlink(targets[n%len(targets)], tmp) == nil && os.Rename(tmp, flip) == nil {
						n++
					}
				}
			}()
			got := text(t, s, "race", args("path", "/data/flip/secret.txt"), nil)
			close(stop)
			flips := <-done
			t.Logf("%s while the link flipped %d times", got, flips)
			var secret, inside, failed int
			if _, err := fmt.Sscanf(got, "ok:secret=%d inside=%d failed=%d", &secret, &inside, &failed); err != nil {
				t.Fatalf("race answer %q: %v", got, err)
			}
			if secret != 0 {
				t.Errorf("the guest read the outside file %d times through a link swapped during the call", secret)
			}
			if inside+failed != 3000 {
				t.Errorf("inside %d + failed %d reads, want 3000", inside, failed)
			}
		})
	})
}

// envOf parses the envargs answer "argc=N argv0=S env=K=V;K=V;".
func envOf(t *testing.T, s string) (argc int, argv0 string, env []string) {
	t.Helper()
	f := strings.SplitN(s, " ", 3)
	if len(f) != 3 {
		t.Fatalf("envargs answer %q", s)
	}
	argc, _ = strconv.Atoi(strings.TrimPrefix(f[0], "argc="))
	argv0 = strings.TrimPrefix(f[1], "argv0=")
	for _, kv := range strings.Split(strings.TrimPrefix(f[2], "env="), ";") {
		if kv != "" {
			env = append(env, kv)
		}
	}
	slices.Sort(env)
	return argc, argv0, env
}

func TestEnvAndArgs(t *testing.T) {
	t.Setenv("SANDBOX_TOKEN", "passed-on")
	t.Setenv("SANDBOX_SECRET", "never")
	onEngines(t, func(t *testing.T, e engine) {
		for _, tc := range []struct {
			name string
			env  map[string]string
			pass []string
			want []string
		}{
			{"nothing granted", nil, nil, nil},
			{"granted only",
				map[string]string{"SANDBOX_A": "1", "SANDBOX_B": "two"},
				[]string{"SANDBOX_TOKEN", "SANDBOX_UNSET"},
				[]string{"SANDBOX_A=1", "SANDBOX_B=two", "SANDBOX_TOKEN=passed-on"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				pol := policy(map[string]host.ModulePolicy{"envargs": {Grants: host.Grants{Env: tc.env, PassEnv: tc.pass}}})
				hostile(t, e, pol, "envargs", func(t *testing.T, s *host.Server) {
					argc, argv0, env := envOf(t, text(t, s, "environ", "{}", nil))
					if argc != 1 || argv0 != "envargs" {
						t.Errorf("args: got argc %d argv[0] %q, want 1 and the module name %q", argc, argv0, "envargs")
					}
					if diff := cmp.Diff(tc.want, env); diff != "" {
						t.Errorf("environment (-want +got):\n%s", diff)
					}
				})
			})
		}
	})
}

// TestClockAndRandom documents what the host gives: the real wall clock,
// a real monotonic clock, and crypto/rand bytes, distinct per instance.
// No policy field changes the clocks: a tool can time itself to the
// nanosecond resolution wazero reports.
func TestClockAndRandom(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		hostile(t, e, policy(nil), "clockrand", func(t *testing.T, s *host.Server) {
			seen := map[string]bool{}
			for i := range 3 {
				before := time.Now().UnixNano()
				got := text(t, s, "clock", "{}", nil)
				after := time.Now().UnixNano()
				var real, mono1, mono2, res int64
				var rnd string
				if _, err := fmt.Sscanf(got, "real=%d mono1=%d mono2=%d res=%d rand=%s", &real, &mono1, &mono2, &res, &rnd); err != nil {
					t.Fatalf("clock answer %q: %v", got, err)
				}
				// The guest reads the host's clock during the call, so its
				// time lies between before and after (the second of slack is
				// for clock granularity, not for speed).
				if real < before-int64(time.Second) || real > after+int64(time.Second) {
					t.Errorf("call %d: wall clock %d, want the host's time within [%d, %d]", i, real, before, after)
				}
				if mono2 <= mono1 {
					t.Errorf("call %d: monotonic clock went from %d to %d, want it to advance", i, mono1, mono2)
				}
				if len(rnd) != 64 || rnd == strings.Repeat("0", 64) {
					t.Errorf("call %d: random bytes %q, want 32 bytes from the host's RNG", i, rnd)
				}
				if seen[rnd] {
					t.Errorf("call %d: random bytes %s repeat those of an earlier instance", i, rnd)
				}
				seen[rnd] = true
				if i == 0 {
					t.Logf("guest sees: wall clock = host time, monotonic resolution %dns, random from crypto/rand", res)
				}
			}
		})
	})
}

// TestPolicyFileGrants shows that the operator's policy file, read with
// host.LoadPolicy, is what grants a mount and environment variables to a
// module whose tools are served over MCP: the same modules without the
// policy are denied.
func TestPolicyFileGrants(t *testing.T) {
	ft := newFSTree(t)
	polFile := filepath.Join(t.TempDir(), "policy.json")
	doc := fmt.Sprintf(`{
  "modules": {
    "fsprobe": {"mounts": [{"hostDir": %q, "guestPath": "/data"}]},
    "envargs": {"env": {"SANDBOX_GRANTED": "yes"}}
  }
}`, ft.mnt)
	if err := os.WriteFile(polFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	pol, err := host.LoadPolicy(polFile)
	if err != nil {
		t.Fatalf("LoadPolicy: %v", err)
	}
	onEngines(t, func(t *testing.T, e engine) {
		for _, tc := range []struct {
			name              string
			policy            *host.Policy
			wantRead, wantEnv string
		}{
			{"without policy", nil, "err:", "env="},
			{"with the policy file", pol, "ok:inside", "env=SANDBOX_GRANTED=yes;"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wasm(t, "fsprobe")
				wasm(t, "envargs")
				watchBaseline(t)
				c := openSession(t, serve(t, e.interpreter, tc.policy, "fsprobe", "envargs"))
				if got, _ := c.tool("read", map[string]any{"path": "/data/inside.txt"}); !strings.HasPrefix(got, tc.wantRead) {
					t.Errorf("read /data/inside.txt: got %q, want prefix %q", got, tc.wantRead)
				}
				if got, _ := c.tool("environ", nil); !strings.HasSuffix(got, tc.wantEnv) {
					t.Errorf("environ: got %q, want suffix %q", got, tc.wantEnv)
				}
			})
		}
	})
}
