package host

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/resultcache"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
)

// This file is the result cache's place on the call path: a tool that
// declares its results cacheable is answered from the cache when a live
// entry matches, without admission or an instance.

// Defaults of the result cache settings in [Config].
const (
	DefaultResultCacheMaxTTL  = 10 * time.Minute
	DefaultResultCacheEntries = resultcache.DefaultMaxEntries
	DefaultResultCacheMiB     = resultcache.DefaultMaxBytes >> 20
)

func newResultCache(cfg Config) *resultcache.Cache {
	entries := cmp.Or(cfg.ResultCacheEntries, DefaultResultCacheEntries)
	bytes := int64(cmp.Or(cfg.ResultCacheMiB, DefaultResultCacheMiB)) << 20
	return resultcache.New(resultcache.Config{MaxEntries: entries, MaxBytes: bytes,
		TenantMaxEntries: max(1, entries/2), TenantMaxBytes: max(1, bytes/2)})
}

// cachePlan is how one served tool's results are cached, decided when the
// catalog is built: for ttl (0: not cached), keyed with the fingerprint of
// the grants its calls receive.
type cachePlan struct {
	ttl    time.Duration
	grants string
}

// cachePlanOf decides the plan of tool t running with lim under its
// policy tp. A tool is cached when it declares "cache": {"cacheable":
// true}, the server's maximum TTL and the tool's resultCacheTtl are not
// negative, and it has no writable mount (its result may depend on what it
// finds there) unless tp says cacheWritable. Its TTL is the least of its
// ttlMs, the tool's resultCacheTtl and the server's maximum. A tool with
// taskStart begin_task is never cached: whether its call becomes a task
// is decided by each call's own client, and concurrent identical calls
// share one run.
func (s *Server) cachePlanOf(t abi.Tool, tp ToolPolicy, lim wasmrt.Limits) cachePlan {
	if t.TaskStart == abi.TaskStartBegin {
		return cachePlan{}
	}
	return s.planFor(t.Cache, tp, lim)
}

// planFor is the plan of what declares hint (a tool, a resource or a
// resource template), running with lim under tp.
func (s *Server) planFor(hint *abi.CacheHint, tp ToolPolicy, lim wasmrt.Limits) cachePlan {
	maxTTL := s.cfg.ResultCacheMaxTTL
	writable := slices.ContainsFunc(lim.Mounts, func(m wasmrt.Mount) bool { return m.Write })
	if hint == nil || !hint.Cacheable || maxTTL <= 0 || tp.ResultCacheTTL < 0 || writable && !tp.CacheWritable {
		return cachePlan{}
	}
	if tp.ResultCacheTTL > 0 {
		maxTTL = min(maxTTL, time.Duration(tp.ResultCacheTTL))
	}
	ttl := maxTTL
	if hint.TTLMillis > 0 {
		ttl = min(ttl, time.Duration(hint.TTLMillis)*time.Millisecond)
	}
	return cachePlan{ttl: ttl, grants: grantsFingerprint(lim)}
}

// grantsFingerprint hashes what a call is granted (environment values,
// mounts), so that a change of grants never hits a result made under
// others. It never leaves the process.
func grantsFingerprint(lim wasmrt.Limits) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(lim.Env)) {
		fmt.Fprintf(h, "env %d:%s %d:%s\n", len(k), k, len(lim.Env[k]), lim.Env[k])
	}
	for _, m := range lim.Mounts {
		fmt.Fprintf(h, "mount %d:%s %d:%s %t\n", len(m.HostDir), m.HostDir, len(m.GuestPath), m.GuestPath, m.Write)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// cachedCall answers a call of t from the result cache, or runs it once
// for every concurrent identical call and stores a successful result. ok
// is false when the call cannot be keyed (its arguments have no canonical
// form, or no events: without a client to ask, an elicitation would fail
// where a client's would not): the caller runs it uncached. Results are
// shared within tenant only; hit reports one taken from the cache.
func (s *Server) cachedCall(ctx context.Context, t *servedTool, tenant, name string, args json.RawMessage, ev abi.Events, run func(context.Context, abi.Events) (*abi.Result, error)) (res *abi.Result, hit, ok bool, err error) {
	if ev == nil {
		return nil, false, false, nil
	}
	canon, cerr := resultcache.Canonical(args)
	if cerr != nil {
		return nil, false, false, nil
	}
	key := resultcache.Key{Tenant: tenant, Digest: t.module.Digest, Tool: name, Args: canon, Grants: t.cache.grants}
	out, hit := s.results.Do(ctx, key, func(ctx context.Context) resultcache.Outcome {
		w := &elicitWatch{Events: ev}
		res, err := run(ctx, w)
		return resultcache.Outcome{Value: res, Size: resultSize(res), TTL: t.cache.ttl, Err: err,
			Cacheable: err == nil && res != nil && !res.IsError && res.Error == nil && !w.elicited.Load()}
	})
	res, _ = out.Value.(*abi.Result)
	return res, hit, true, out.Err
}

// resultSize is what a result holds, for the cache's byte bound.
func resultSize(r *abi.Result) int64 {
	if r == nil {
		return 0
	}
	n := int64(len(r.StructuredContent)) + 64
	for _, c := range r.Content {
		n += int64(len(c.Text)+len(c.Data)+len(c.MIMEType)+len(c.URI)+len(c.Name)+len(c.Title)+len(c.Description)) + 64
		if c.Resource != nil {
			n += contentsSize(c.Resource)
		}
	}
	return n
}

// contentsSize is what a resource's contents hold, for the same bound.
func contentsSize(c *abi.ResourceContents) int64 {
	return int64(len(c.URI)+len(c.MIMEType)+len(c.Text)+len(c.Blob)) + 64
}

// cachedRead answers a read of uri from the result cache, as cachedCall
// answers a call: one run for concurrent identical reads, results shared
// within tenant only.
func (s *Server) cachedRead(ctx context.Context, digest string, plan cachePlan, tenant, uri string, run func(context.Context) (*abi.ReadResult, error)) (*abi.ReadResult, error) {
	// A tool name has no ':' (abi.DecodeManifest): these keys are never a call's.
	key := resultcache.Key{Tenant: tenant, Digest: digest, Tool: "read:" + uri, Grants: plan.grants}
	out, _ := s.results.Do(ctx, key, func(ctx context.Context) resultcache.Outcome {
		res, err := run(ctx)
		var size int64 = 64
		if res != nil {
			for i := range res.Contents {
				size += contentsSize(&res.Contents[i])
			}
		}
		return resultcache.Outcome{Value: res, Size: size, TTL: plan.ttl, Err: err, Cacheable: err == nil && res != nil && res.Error == nil}
	})
	res, _ := out.Value.(*abi.ReadResult)
	return res, out.Err
}

// elicitWatch records whether a call asked its user for input: such a
// result depends on the answer, not only on the arguments, and is never
// stored.
type elicitWatch struct {
	abi.Events
	elicited atomic.Bool
}

// BeginTask passes begin_task on: a task-augmented call of a cached tool
// is a task from its start, and says so.
func (w *elicitWatch) BeginTask() bool {
	b, ok := w.Events.(abi.TaskBeginner)
	return ok && b.BeginTask()
}

func (w *elicitWatch) Elicit(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	w.elicited.Store(true)
	return w.Events.Elicit(ctx, req)
}

// Sample and Roots pass the questions on, as Elicit does: a result that
// depends on the client's model or roots is not stored either.
func (w *elicitWatch) Sample(ctx context.Context, key string, req json.RawMessage) (json.RawMessage, error) {
	w.elicited.Store(true)
	a, ok := w.Events.(abi.Asker)
	if !ok {
		return nil, fmt.Errorf("%w: the client cannot be asked", errors.ErrUnsupported)
	}
	return a.Sample(ctx, key, req)
}

func (w *elicitWatch) Roots(ctx context.Context, key string) (json.RawMessage, error) {
	w.elicited.Store(true)
	a, ok := w.Events.(abi.Asker)
	if !ok {
		return nil, fmt.Errorf("%w: the client cannot be asked", errors.ErrUnsupported)
	}
	return a.Roots(ctx, key)
}

// dropCachedResults removes the cached results of the module versions prev
// served and next does not: a new version never serves an old result (its
// digest is in the key), and the old one's entries go at once rather than
// wait for eviction.
func (s *Server) dropCachedResults(prev, next *catalog) {
	if prev == nil {
		return
	}
	served := make(map[string]bool)
	for _, t := range next.tools {
		served[t.module.Digest] = true
	}
	for _, t := range prev.tools {
		if d := t.module.Digest; !served[d] {
			served[d] = true // once
			s.results.DropDigest(d)
		}
	}
}

// logResultCache writes the result cache's counts to the operator log: at
// each reload and when the server closes.
func (s *Server) logResultCache(when string) {
	st := s.results.Stats()
	if st.Hits+st.Misses == 0 {
		return
	}
	s.log.Info("result cache", "at", when, "hits", st.Hits, "misses", st.Misses, "shared", st.Shared,
		"evictions", st.Evictions, "expirations", st.Expirations, "entries", st.Entries, "bytes", st.Bytes)
}
