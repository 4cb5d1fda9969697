package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/strictjson"
	"github.com/wasmtask/wasmtask/plugins"
)

func TestParse(t *testing.T) {
	dir := t.TempDir()
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, in string
		wantErr  string // "" = valid
	}{
		{"empty", `{}`, ""},
		{"full", `{"defaults":{"memoryMiB":32,"timeout":"5s","maxOutputBytes":10,"maxLogBytes":10,"maxConcurrency":2,"maxQueue":1},
			"maxInstances":4,"memoryBudgetMiB":512,
			"modules":{"m":{"digest":"` + digest + `","maxInstances":2,"env":{"A":"1"},"passEnv":["HOME"],
				"mounts":[{"hostDir":"` + dir + `","guestPath":"/data","write":true}],"tools":{"t":{"memoryMiB":8}}}}}`, ""},
		{"not json", `nope`, "does not start with {"},
		{"syntax error", "{\n  \"defaults\": {,}\n}", "line 2, column 16: invalid character ','"},
		{"field in another case", "{\n  \"defaults\": {\"memoryMib\": 5}\n}", `line 2, column 16: unknown field "memoryMib" in "defaults" (did you mean "memoryMiB"?)`},
		{"wrong type", "{\"defaults\":\n {\"memoryMiB\": \"x\"}}", `line 2, column 3: "defaults.memoryMiB" must be an integer, not a string`},
		{"unknown field", `{"defaults":{"memoryMB":32}}`, `unknown field "memoryMB"`},
		{"trailing", `{} {}`, "trailing data"},
		{"bad duration", `{"defaults":{"timeout":"soon"}}`, "invalid duration"},
		{"numeric duration", `{"defaults":{"timeout":5}}`, "duration must be a string"},
		{"negative timeout", `{"defaults":{"timeout":"-1s"}}`, "timeout is negative"},
		{"memory too large", `{"modules":{"m":{"tools":{"t":{"memoryMiB":1024}}}}}`, "modules.m.tools.t.memoryMiB 1024 is outside 0..256"},
		{"negative limit", `{"defaults":{"maxQueue":-1}}`, "must not be negative"},
		{"result counts", `{"defaults":{"maxResultBlocks":5,"maxResultDepth":128,"maxResultValues":50}}`, ""},
		{"negative result blocks", `{"defaults":{"maxResultBlocks":-1}}`, "must not be negative"},
		{"result too deep", `{"modules":{"m":{"tools":{"t":{"maxResultDepth":129}}}}}`, "modules.m.tools.t.maxResultDepth 129 is more than 128"},
		{"negative instances", `{"maxInstances":-1}`, "maxInstances is negative"},
		{"negative module instances", `{"modules":{"m":{"maxInstances":-1}}}`, "modules.m.maxInstances is negative"},
		{"negative module memory", `{"modules":{"m":{"maxMemoryMiB":-1}}}`, "modules.m.maxMemoryMiB -1 is outside"},
		{"module memory not a bound", `{"modules":{"m":{"maxMemoryMiB":2000000}}}`, "modules.m.maxMemoryMiB 2000000 is outside"},
		{"negative budget", `{"memoryBudgetMiB":-1}`, "memoryBudgetMiB is negative"},
		{"bad digest", `{"modules":{"m":{"digest":"sha256:abc"}}}`, "is not \"sha256:\" and 64"},
		{"upper-case digest", `{"modules":{"m":{"digest":"` + strings.ToUpper(digest) + `"}}}`, "is not \"sha256:\""},
		{"file name as key", `{"modules":{"m.wasm":{}}}`, `without ".wasm"`},
		{"bad env name", `{"modules":{"m":{"env":{"A=B":"x"}}}}`, "invalid variable name"},
		{"relative host dir", `{"modules":{"m":{"mounts":[{"hostDir":"data","guestPath":"/d"}]}}}`, "is not an absolute path"},
		{"relative guest path", `{"modules":{"m":{"mounts":[{"hostDir":"` + dir + `","guestPath":"d"}]}}}`, "is not an absolute path"},
		{"missing host dir", `{"modules":{"m":{"mounts":[{"hostDir":"` + dir + `/nope","guestPath":"/d"}]}}}`, "no such file"},
		{"twice", `{"modules":{"m":{"mounts":[{"hostDir":"` + dir + `","guestPath":"/d"},{"hostDir":"` + dir + `","guestPath":"/d"}]}}}`, "mounted twice"},
		// Grants bind to modules: the earlier format, keyed by tool name,
		// and grants in the defaults are refused with the way out.
		{"tools by name", `{"tools":{"t":{"memoryMiB":8}}}`, `move "tools" entries under "modules"`},
		{"grants in defaults", `{"defaults":{"env":{"A":"1"}}}`, "granted to a module"},
		{"grants on a tool", `{"modules":{"m":{"tools":{"t":{"mounts":[]}}}}}`, "granted to a module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got error %v, want ErrInvalid containing %q", err, tc.wantErr)
			}
		})
	}
}

// The entry of a module applies to the file of its name, and only while
// the file has the pinned digest; limits merge defaults, then the tool's
// override in its module's entry.
func TestForModuleAndTool(t *testing.T) {
	pinned := "sha256:" + strings.Repeat("0", 64)
	p, err := Parse([]byte(`{
		"defaults": {"timeout": "10s", "maxConcurrency": 2},
		"modules": {
			"big":  {"tools": {"big": {"memoryMiB": 128, "maxQueue": 1, "maxResultBlocks": 20}}, "maxInstances": 3, "maxMemoryMiB": 100},
			"envy": {"passEnv": ["HOME", "MISSING"], "env": {"B": "2"}},
			"pin":  {"digest": "` + pinned + `", "env": {"P": "1"}, "tools": {"p": {"memoryMiB": 8}}}
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
	def := Tool{MemoryMiB: 64, Timeout: strictjson.Duration(10 * time.Second), MaxOutputBytes: 1 << 20, MaxLogBytes: 64 << 10, MaxConcurrency: 2, MaxQueue: 8,
		MaxResultBlocks: 10_000, MaxResultDepth: 64, MaxResultValues: 100_000}
	other := "sha256:" + strings.Repeat("1", 64)
	for _, tc := range []struct {
		module, digest, tool string
		want                 Tool
		wantEnv              map[string]string
		wantInstances        int
		wantMemoryMiB        uint64
		wantPinErr           bool
	}{
		// The default share: a quarter of the server's 64 instances and
		// of a budget of 1 GiB.
		{"other", other, "big", def, nil, 16, 256, false}, // a tool name alone gets nothing
		{"big", other, "big", with(def, func(tp *Tool) { tp.MemoryMiB, tp.MaxQueue, tp.MaxResultBlocks = 128, 1, 20 }), nil, 3, 100, false},
		{"big", other, "small", def, nil, 3, 100, false},
		{"envy", other, "e", def, map[string]string{"B": "2", "HOME": "/home/op"}, 16, 256, false},
		{"pin", pinned, "p", with(def, func(tp *Tool) { tp.MemoryMiB = 8 }), map[string]string{"P": "1"}, 16, 256, false},
		{"pin", other, "p", def, nil, 16, 256, true}, // another content of the file: nothing applies
	} {
		entry, err := p.ForModule(plugins.Module{Name: tc.module, Digest: tc.digest})
		if (err != nil) != tc.wantPinErr || err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("ForModule(%s, %s): error %v, want a pin error: %v", tc.module, tc.digest, err, tc.wantPinErr)
		}
		got := p.ForTool(entry, tc.tool)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s/%s: ForTool (-want +got):\n%s", tc.module, tc.tool, diff)
		}
		lim := got.Limits(entry.Grants, getenv)
		if diff := cmp.Diff(tc.wantEnv, lim.Env); diff != "" {
			t.Errorf("%s/%s: Limits().Env (-want +got):\n%s", tc.module, tc.tool, diff)
		}
		if want := (abi.ResultLimits{MaxBlocks: tc.want.MaxResultBlocks, MaxDepth: tc.want.MaxResultDepth, MaxValues: tc.want.MaxResultValues}); lim.Result != want {
			t.Errorf("%s/%s: Limits().Result = %+v, want %+v", tc.module, tc.tool, lim.Result, want)
		}
		if n, mem := p.ModuleShare(entry, 1<<30); n != tc.wantInstances || mem != tc.wantMemoryMiB<<20 {
			t.Errorf("%s: module share %d instances, %d MiB; want %d, %d", tc.module, n, mem>>20, tc.wantInstances, tc.wantMemoryMiB)
		}
	}
	// No policy: the built-in defaults, nothing granted.
	entry, err := (*Policy)(nil).ForModule(plugins.Module{Name: "x"})
	got := (*Policy)(nil).ForTool(entry, "x")
	lim := got.Limits(entry.Grants, getenv)
	if err != nil || got.MemoryMiB != DefaultMemoryMiB || got.Timeout.Std() != DefaultTimeout || lim.Env != nil || lim.Mounts != nil {
		t.Errorf("nil policy: got %+v, %v, want defaults with no env or mounts", got, err)
	}
	if n, mem := (*Policy)(nil).ModuleShare(entry, 1000); n != DefaultMaxInstances/4 || mem != 250 {
		t.Errorf("nil policy: module share %d instances, %d bytes of 1000; want %d, 250", n, mem, DefaultMaxInstances/4)
	}
}

func with(tp Tool, f func(*Tool)) Tool {
	f(&tp)
	return tp
}

// The server-wide bounds and the naming rules fill the defaults, for a nil
// policy too; a module's load gets the most memory any of its tools has.
func TestBoundsAndLoadLimits(t *testing.T) {
	if err := (*Policy)(nil).Validate(); err != nil {
		t.Errorf("nil policy: Validate() = %v, want nil", err)
	}
	def := Bounds{MaxInstances: DefaultMaxInstances, MaxCodeMiB: DefaultMaxCodeMiB, LoadTimeout: time.Duration(DefaultLoadTimeout)}
	if got := (*Policy)(nil).Bounds(); got != def {
		t.Errorf("nil policy: Bounds() = %+v, want %+v", got, def)
	}
	p, err := Parse([]byte(`{"maxInstances": 3, "memoryBudgetMiB": 100, "maxCodeMiB": 5, "loadTimeout": "7s", "nameGrace": "-1s",
		"modules": {"m": {"tools": {"a": {"memoryMiB": 8}, "b": {"memoryMiB": 200}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Bounds(), (Bounds{MaxInstances: 3, MemoryBudgetMiB: 100, MaxCodeMiB: 5, LoadTimeout: 7 * time.Second}); got != want {
		t.Errorf("Bounds() = %+v, want %+v", got, want)
	}
	if got := p.Rules(nil).NameGrace; got != 0 {
		t.Errorf("negative nameGrace: Rules().NameGrace = %v, want 0", got)
	}
	if got := (*Policy)(nil).Rules(nil).NameGrace; got != time.Duration(DefaultNameGrace) {
		t.Errorf("nil policy: Rules().NameGrace = %v, want %v", got, time.Duration(DefaultNameGrace))
	}
	if got := p.LoadLimits(plugins.Module{Name: "m"}).MemoryMiB; got != 200 {
		t.Errorf("LoadLimits(m).MemoryMiB = %d, want 200 (its largest tool)", got)
	}
	if got := p.LoadLimits(plugins.Module{Name: "other"}).MemoryMiB; got != DefaultMemoryMiB {
		t.Errorf("LoadLimits(other).MemoryMiB = %d, want %d", got, DefaultMemoryMiB)
	}
}
