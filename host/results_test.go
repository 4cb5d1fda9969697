package host

import (
	"context"
	"encoding/json"
	"testing"
	"testing/fstest"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/defaulttools"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
	"github.com/wasmtask/wasmtask/plugins"
)

// quiet is abi.Events that drops everything: a call with events may be
// cached (without any, an elicitation would fail where a client's would not).
type quiet struct{}

func (quiet) Progress(float64, float64, string) {}
func (quiet) Status(string)                     {}
func (quiet) Log(int32, string)                 {}
func (quiet) Elicit(context.Context, abi.ElicitRequest) (abi.ElicitReply, error) {
	return abi.ElicitReply{}, context.Canceled
}

func addModule(t testing.TB) []byte {
	b, err := defaulttools.FS.ReadFile("add.wasm")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// callAs calls tool as tenant the way tools/call does, and reports
// whether the result cache answered.
func callAs(t *testing.T, s *Server, tenant, tool, args string) (*abi.Result, bool) {
	t.Helper()
	res, hit, err := s.CallAs(context.Background(), Caller{Tenant: tenant}, tool, json.RawMessage(args), quiet{})
	if err != nil {
		t.Fatalf("%s(%s) as %s: %v", tool, args, tenant, err)
	}
	return res, hit
}

func instantiations(s *Server, tool string) uint64 {
	t, _ := s.catalog.Load().tool(tool)
	return t.code.Instantiations()
}

// A cacheable tool's repeated call, spelled differently, is answered from
// the cache without an instance; another tenant's identical call is not.
func TestResultCacheHits(t *testing.T) {
	s, err := New(context.Background(), Config{ToolsFS: fstest.MapFS{"add.wasm": {Data: addModule(t)}}, CacheDir: testCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.ready(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	base := instantiations(s, "add") // loading described the module
	first, hit := callAs(t, s, "alice", "add", `{"a":1,"b":2}`)
	if hit || instantiations(s, "add") != base+1 {
		t.Fatalf("first call: hit=%v, %d instances", hit, instantiations(s, "add"))
	}
	again, hit := callAs(t, s, "alice", "add", ` { "b" : 2 , "a" : 1 } `)
	if !hit || instantiations(s, "add") != base+1 || string(again.StructuredContent) != string(first.StructuredContent) {
		t.Errorf("same arguments respelled: hit=%v, %d instances, %s; want a hit, 1 instance, %s", hit, instantiations(s, "add"), again.StructuredContent, first.StructuredContent)
	}
	if _, hit := callAs(t, s, "bob", "add", `{"a":1,"b":2}`); hit || instantiations(s, "add") != base+2 {
		t.Errorf("another tenant: hit=%v, %d instances; want a miss that runs", hit, instantiations(s, "add"))
	}
	if _, hit := callAs(t, s, "alice", "add", `{"a":1,"b":3}`); hit {
		t.Error("other arguments hit")
	}
	if st := s.results.Stats(); st.Hits != 1 || st.Misses != 3 {
		t.Errorf("counts %+v, want 1 hit and 3 misses", st)
	}
	// A failure is never stored.
	before := s.results.Stats().Entries
	if _, err := s.Call(context.Background(), "add", json.RawMessage(`{"a":"x"}`), quiet{}); err == nil {
		t.Fatal("invalid arguments: want an error")
	}
	if n := s.results.Stats().Entries; n != before {
		t.Errorf("a failed call was stored: %d entries, had %d", n, before)
	}
}

// A new version of a module never serves an old version's result, and the
// old version's entries are dropped when it stops being served.
func TestResultCacheReloadInvalidates(t *testing.T) {
	v1 := addModule(t)
	v2 := append(append([]byte(nil), v1...), 0, 6, 4, 'v', 'e', 'r', '2', 1) // a custom section: new digest, same code
	s, err := New(context.Background(), Config{ToolsFS: fstest.MapFS{"add.wasm": {Data: v1}}, CacheDir: testCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.ready(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	callAs(t, s, "alice", "add", `{"a":1,"b":2}`)
	if _, hit := callAs(t, s, "alice", "add", `{"a":1,"b":2}`); !hit {
		t.Fatal("no hit before the reload")
	}
	snap, err := plugins.ScanFS(fstest.MapFS{"add.wasm": {Data: v2}}, plugins.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s.reload(context.Background(), snap)
	if err := s.awaitCatalog(context.Background(), func(c *catalog) bool { return c.gen.Snapshot() == snap && c.gen.Loading() == 0 }); err != nil {
		t.Fatal(err)
	}
	if tl, ok := s.catalog.Load().tool("add"); !ok || tl.module.Digest != plugins.Digest(v2) {
		t.Fatalf("after the reload: add served %v, problems %v; want version 2", ok, s.catalog.Load().problems)
	}
	if n := s.results.Stats().Entries; n != 0 {
		t.Errorf("%d entries after the old version stopped being served, want 0", n)
	}
	base := instantiations(s, "add")
	if _, hit := callAs(t, s, "alice", "add", `{"a":1,"b":2}`); hit || instantiations(s, "add") != base+1 {
		t.Errorf("new version: hit=%v, %d instances; want its own run", hit, instantiations(s, "add"))
	}
}

// The operator can turn the cache off; a tool that does not declare
// itself cacheable is never cached.
func TestResultCachePlan(t *testing.T) {
	s, err := New(context.Background(), Config{ToolsFS: fstest.MapFS{"add.wasm": {Data: addModule(t)}}, CacheDir: testCacheDir, ResultCacheMaxTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.ready(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	base := instantiations(s, "add")
	callAs(t, s, "alice", "add", `{"a":1,"b":2}`)
	if _, hit := callAs(t, s, "alice", "add", `{"a":1,"b":2}`); hit || instantiations(s, "add") != base+2 {
		t.Errorf("cache off: hit=%v, %d instances", hit, instantiations(s, "add"))
	}
	tl, _ := s.catalog.Load().tool("add")
	decl := tl.decl
	decl.Cache = nil
	on := &Server{cfg: Config{ResultCacheMaxTTL: DefaultResultCacheMaxTTL}}
	if p := on.cachePlanOf(decl, tl.policy, tl.lim); p.ttl != 0 {
		t.Errorf("a tool without a cache hint has plan %+v", p)
	}
	lim := tl.lim
	if p := on.cachePlanOf(tl.decl, tl.policy, lim); p.ttl != DefaultResultCacheMaxTTL {
		t.Errorf("add (cacheable, no ttlMs): plan %+v, want the operator's maximum", p)
	}
	lim.Mounts = []wasmrt.Mount{{HostDir: t.TempDir(), GuestPath: "/data"}}
	ro := on.cachePlanOf(tl.decl, tl.policy, lim)
	if ro.ttl == 0 || ro.grants == on.cachePlanOf(tl.decl, tl.policy, tl.lim).grants {
		t.Errorf("read-only mount: plan %+v; want cached under other grants", ro)
	}
	lim.Mounts[0].Write = true
	if p := on.cachePlanOf(tl.decl, tl.policy, lim); p.ttl != 0 {
		t.Errorf("a tool with a writable mount has plan %+v, want not cached", p)
	}
	tp := tl.policy
	tp.CacheWritable = true
	if p := on.cachePlanOf(tl.decl, tp, lim); p.ttl == 0 {
		t.Errorf("cacheWritable: plan %+v, want cached", p)
	}
	tp.ResultCacheTTL = Duration(time.Second)
	if p := on.cachePlanOf(tl.decl, tp, tl.lim); p.ttl != time.Second {
		t.Errorf("resultCacheTtl 1s: plan %+v, want 1s", p)
	}
	tp.ResultCacheTTL = -1
	if p := on.cachePlanOf(tl.decl, tp, tl.lim); p.ttl != 0 {
		t.Errorf("resultCacheTtl negative: plan %+v, want not cached", p)
	}
	begins := tl.decl
	begins.TaskSupport, begins.TaskStart = abi.TaskRequired, abi.TaskStartBegin
	if p := on.cachePlanOf(begins, tl.policy, tl.lim); p.ttl != 0 {
		t.Errorf("a cacheable tool with taskStart begin_task has plan %+v, want not cached", p)
	}
}

// cacheableVerModule is verModule with a cacheable tool: the description
// gives its bytes to the cache hint.
func cacheableVerModule(t *testing.T, tool, version string) []byte {
	const desc = `"description":"Answers with its version; ms sleeps first, hold asks the user first."`
	const hint = `"cache":{"cacheable":true},"description":"The cacheable version tool; task-capable."`
	return replaceOnce(t, verModule(t, tool, version), desc, hint)
}

// TestResultCacheTaskHit: a task-augmented call of a cacheable tool still
// answers with a CreateTaskResult; on a hit its task completes without an
// instance, and tasks/result marks the result as a cache hit.
func TestResultCacheTaskHit(t *testing.T) {
	s, err := New(context.Background(), Config{ToolsFS: fstest.MapFS{"v.wasm": {Data: cacheableVerModule(t, "ver", "v1")}}, CacheDir: testCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() }) // after the client's cleanup
	c := newClient(t, s)
	if info := s.Tools()[0]; info.ResultCacheTTL <= 0 {
		t.Fatalf("the patched tool is not cacheable: %+v", info)
	}
	base := instantiations(s, "ver")
	args := map[string]any{"ms": 1}
	first := c.StartTask("ver", args, 0)
	if res := c.TaskResult(first.TaskID); res.IsError || res.Text() != "v1" || res.Meta["io.wasmtask/cache"] != nil {
		t.Fatalf("first task's result = %+v, want v1, not from the cache", res)
	}
	if n := instantiations(s, "ver"); n != base+1 {
		t.Fatalf("%d instances after the first task, want %d", n, base+1)
	}
	again := c.StartTask("ver", args, 0)
	if again.TaskID == first.TaskID {
		t.Fatal("the second task call reused the first task's ID")
	}
	res := c.TaskResult(again.TaskID)
	hit, _ := res.Meta["io.wasmtask/cache"].(map[string]any)
	if res.IsError || res.Text() != "v1" || hit["hit"] != true {
		t.Errorf("second task's result = %+v, want v1 marked as a cache hit", res)
	}
	if got := c.GetTask(again.TaskID); got.Status != "completed" {
		t.Errorf("second task is %s, want completed", got.Status)
	}
	if n := instantiations(s, "ver"); n != base+1 {
		t.Errorf("%d instances after the hit, want still %d", n, base+1)
	}
}
