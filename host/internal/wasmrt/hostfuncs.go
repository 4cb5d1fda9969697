package wasmrt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/guestevents"
	"github.com/wasmtask/wasmtask/host/internal/schema"
)

// Bounds on what a guest hands to the host functions.
const (
	maxMessageBytes = 4 << 10  // progress and status messages are truncated here
	maxElicitBytes  = 64 << 10 // a larger elicit request is abi.ElicitBadRequest
	// logMessageCost is what one log message (a log call or a stderr
	// line) costs of the call's log budget beyond its bytes: an empty
	// message is still a notification the client receives.
	logMessageCost = 64
	// maxElicits bounds the questions one call may put to the user; past
	// it elicit returns abi.ElicitUnsupported without asking. elicitBurst
	// and elicitEvery bound their rate: a client that answers at once (a
	// declining bot) would otherwise turn a guest loop into a flood of
	// round trips.
	maxElicits  = 32
	elicitBurst = 4
	elicitEvery = time.Second
)

// callState is the per-call state the host functions find in their context.
type callState struct {
	ev       abi.Events            // the call's notifier (rate-limited); nil without events
	notes    *guestevents.Notifier // the same, for Finish
	logLeft  int                   // log budget left, bytes
	logNoted bool                  // the "log truncated" notice was sent
	reply    []byte                // pending elicit reply

	begun, isTask bool // begin_task was called, and what it answered
	preinit       bool // the run is a pre-initialisation: host functions trap
	abi11         bool // the module knows ABI 1.1's codes (elicit's -3)

	onFuel  func(stopping bool) // called at each fuel check (tests; see fuelHookKey)
	yielded time.Time           // when the guest last yielded at a fuel check (yieldIfDue)

	elicits     int       // elicitations asked so far
	elicitReady time.Time // when the next elicitation past the burst may be asked
}

func newCallState(ev abi.Events, logBudget int) *callState {
	s := &callState{logLeft: logBudget}
	if ev != nil {
		s.notes = guestevents.New(ev)
		s.ev = s.notes
	}
	return s
}

// finish flushes the call's notifications once the guest has ended.
func (s *callState) finish() {
	if s.notes != nil {
		s.notes.Finish()
	}
}

// mayElicit reports whether the call may put one more question to the
// user, and counts it.
func (s *callState) mayElicit() bool {
	if s.elicits >= maxElicits {
		return false
	}
	now := time.Now()
	if s.elicits >= elicitBurst && now.Before(s.elicitReady) {
		return false
	}
	s.elicits++
	if s.elicits >= elicitBurst {
		s.elicitReady = now.Add(elicitEvery)
	}
	return true
}

type callStateKey struct{}

func stateOf(ctx context.Context) *callState {
	s, _ := ctx.Value(callStateKey{}).(*callState)
	return s
}

// logBytes is log for a message still in guest memory: the budget is
// checked before the bytes are copied, so a guest cannot make the host copy
// (or keep) more than its log budget.
func (s *callState) logBytes(level int32, msg []byte) {
	if s.ev == nil {
		return
	}
	if len(msg)+logMessageCost > s.logLeft {
		s.overBudget()
		return
	}
	s.log(level, string(msg))
}

// log forwards one log message while the budget lasts, and reports
// whether any budget is left.
func (s *callState) log(level int32, msg string) bool {
	if s.ev == nil {
		return false
	}
	if len(msg)+logMessageCost > s.logLeft {
		s.overBudget()
		return false
	}
	s.logLeft -= len(msg) + logMessageCost
	s.ev.Log(level, msg)
	return true
}

// overBudget ends the call's log: one notice, then nothing more.
func (s *callState) overBudget() {
	if !s.logNoted {
		s.logNoted = true
		s.notes.Notice("wasmtask: log limit reached, further guest log dropped")
	}
	s.logLeft = 0
}

// hostSignature is the Wasm type of one host function of abi.ImportModule.
type hostSignature struct {
	params, results []api.ValueType
}

var (
	i32 = api.ValueTypeI32
	f64 = api.ValueTypeF64
)

// hostFuncs are the functions of abi.ImportModule with their Wasm types, as
// documented in abi.go.
var hostFuncs = map[string]hostSignature{
	abi.FuncProgress: {[]api.ValueType{f64, f64, i32, i32}, nil},
	abi.FuncStatus:   {[]api.ValueType{i32, i32}, nil},
	abi.FuncLog:      {[]api.ValueType{i32, i32, i32}, nil},
	abi.FuncElicit:   {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	abi.FuncReply:    {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	// ABI 1.1
	abi.FuncElicitAll: {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	abi.FuncBeginTask: {nil, []api.ValueType{i32}},
	// ABI 1.2
	abi.FuncSample: {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	abi.FuncRoots:  {nil, []api.ValueType{i32}},
}

// instantiateHost defines abi.ImportModule in r. The functions read their
// per-call state from the context of the call.
func instantiateHost(ctx context.Context, r wazero.Runtime) error {
	b := r.NewHostModuleBuilder(abi.ImportModule)
	def := func(name string, fn api.GoModuleFunc) {
		sig := hostFuncs[name]
		guarded := func(ctx context.Context, mod api.Module, stack []uint64) {
			if s := stateOf(ctx); s != nil && s.preinit {
				panic(fmt.Errorf("%s.%s: called during %s, before any call exists", abi.ImportModule, name, abi.ExportInitialize))
			}
			fn(ctx, mod, stack)
		}
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(guarded), sig.params, sig.results).Export(name)
	}
	def(abi.FuncProgress, hostProgress)
	def(abi.FuncStatus, hostStatus)
	def(abi.FuncLog, hostLog)
	def(abi.FuncElicit, hostElicit)
	def(abi.FuncReply, hostReply)
	def(abi.FuncElicitAll, hostElicitAll)
	def(abi.FuncBeginTask, hostBeginTask)
	def(abi.FuncSample, hostSample)
	def(abi.FuncRoots, hostRoots)
	_, err := b.Instantiate(ctx)
	return err
}

// guestBytes returns the guest memory [ptr, ptr+n) or traps the guest with a
// message naming the function.
func guestBytes(mod api.Module, fn string, ptr, n uint32) []byte {
	mem := mod.Memory()
	if mem == nil {
		panic(fmt.Errorf("%s.%s: the module has no memory", abi.ImportModule, fn))
	}
	b, ok := mem.Read(ptr, n)
	if !ok {
		panic(fmt.Errorf("%s.%s: buffer [%d, %d) is outside the module's memory (%d bytes)",
			abi.ImportModule, fn, ptr, uint64(ptr)+uint64(n), mem.Size()))
	}
	return b
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

func hostProgress(ctx context.Context, mod api.Module, stack []uint64) {
	if ctx.Err() != nil {
		exitOnDone(ctx) // the call is over: the guest goes no further
	}
	progress, total := api.DecodeF64(stack[0]), api.DecodeF64(stack[1])
	msg := guestBytes(mod, abi.FuncProgress, api.DecodeU32(stack[2]), api.DecodeU32(stack[3]))
	if s := stateOf(ctx); s != nil && s.ev != nil {
		if math.IsNaN(progress) || math.IsInf(progress, 0) {
			return
		}
		if math.IsNaN(total) || math.IsInf(total, 0) || total < 0 {
			total = 0
		}
		s.ev.Progress(progress, total, truncate(msg, maxMessageBytes))
	}
}

func hostStatus(ctx context.Context, mod api.Module, stack []uint64) {
	if ctx.Err() != nil {
		exitOnDone(ctx) // the call is over: the guest goes no further
	}
	msg := guestBytes(mod, abi.FuncStatus, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]))
	if s := stateOf(ctx); s != nil && s.ev != nil {
		s.ev.Status(truncate(msg, maxMessageBytes))
	}
}

func hostLog(ctx context.Context, mod api.Module, stack []uint64) {
	if ctx.Err() != nil {
		exitOnDone(ctx) // the call is over: the guest goes no further
	}
	level := api.DecodeI32(stack[0])
	msg := guestBytes(mod, abi.FuncLog, api.DecodeU32(stack[1]), api.DecodeU32(stack[2]))
	level = min(max(level, abi.LogDebug), abi.LogError)
	if s := stateOf(ctx); s != nil {
		s.logBytes(level, msg)
	}
}

// hostElicit blocks until the user answers. It returns the byte length of
// the reply JSON, which the guest then copies with reply, or a negative
// abi.Elicit* code. When ctx is done it ends the call: returning normally
// would let the guest carry on as if the call were alive.
func hostElicit(ctx context.Context, mod api.Module, stack []uint64) {
	if ctx.Err() != nil {
		exitOnDone(ctx) // the call is over: the guest goes no further
	}
	ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	raw := guestBytes(mod, abi.FuncElicit, ptr, n)
	s := stateOf(ctx)
	if s == nil || s.ev == nil {
		stack[0] = api.EncodeI32(abi.ElicitUnsupported)
		return
	}
	var req abi.ElicitRequest
	if len(raw) > maxElicitBytes || json.Unmarshal(raw, &req) != nil ||
		!validQuestion(&abi.Question{Key: req.Key, Message: req.Message, RequestedSchema: req.RequestedSchema}) {
		stack[0] = api.EncodeI32(abi.ElicitBadRequest)
		return
	}
	if !s.mayElicit() {
		stack[0] = api.EncodeI32(s.code(abi.ElicitLimit))
		return
	}
	reply, err := s.ev.Elicit(ctx, req)
	if ctx.Err() != nil {
		exitOnDone(ctx)
	}
	if err != nil {
		// The guest learns which of "nobody can answer" and "limit
		// reached" it met; the details are the host's to log, not text
		// for the guest's log, which reaches the client.
		stack[0] = api.EncodeI32(s.code(elicitCode(err)))
		return
	}
	b, err := json.Marshal(reply)
	if err != nil || len(b) > math.MaxInt32 {
		stack[0] = api.EncodeI32(abi.ElicitUnsupported)
		return
	}
	s.reply = b
	stack[0] = api.EncodeI32(int32(len(b)))
}

// hostElicitAll asks up to abi.MaxElicitAll questions at once and blocks
// until every one is answered: the client sees them all pending together
// (a task's or a round's inputRequests). Each is an abi.Question: an
// elicitation or, from ABI 1.2, a sampling or roots request. The reply is
// a JSON array of the replies, in order; a question the client could not
// take is answered {"action":"cancel"} (an elicitation) or null. It
// returns -1 when nobody can answer any of them, and -2, asking nobody,
// when the request is not an array of valid questions.
func hostElicitAll(ctx context.Context, mod api.Module, stack []uint64) {
	if ctx.Err() != nil {
		exitOnDone(ctx)
	}
	ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	raw := guestBytes(mod, abi.FuncElicitAll, ptr, n)
	s := stateOf(ctx)
	if s == nil || s.ev == nil {
		stack[0] = api.EncodeI32(abi.ElicitUnsupported)
		return
	}
	var qs []abi.Question
	if len(raw) > maxElicitBytes || json.Unmarshal(raw, &qs) != nil || len(qs) == 0 || len(qs) > abi.MaxElicitAll {
		stack[0] = api.EncodeI32(abi.ElicitBadRequest)
		return
	}
	for i := range qs {
		// A key names one question: two in one request would share an answer.
		if !validQuestion(&qs[i]) || qs[i].Key != "" && slices.ContainsFunc(qs[:i], func(o abi.Question) bool { return o.Key == qs[i].Key }) {
			stack[0] = api.EncodeI32(abi.ElicitBadRequest)
			return
		}
	}
	for range qs { // each question counts against the call's bounds
		if !s.mayElicit() {
			stack[0] = api.EncodeI32(abi.ElicitLimit)
			return
		}
	}
	var asker abi.Asker
	if s.notes != nil {
		asker = s.notes.Asker()
	}
	replies := make([]json.RawMessage, len(qs))
	failed := make([]bool, len(qs))
	codes := make([]int32, len(qs))
	var wg sync.WaitGroup
	for i, q := range qs {
		wg.Go(func() {
			var err error
			switch {
			case q.Method == abi.MethodSample && asker != nil:
				replies[i], err = asker.Sample(ctx, q.Key, q.Params)
			case q.Method == abi.MethodRoots && asker != nil:
				replies[i], err = asker.Roots(ctx, q.Key)
			case q.Method == abi.MethodSample || q.Method == abi.MethodRoots:
				err = errors.ErrUnsupported
			default:
				var reply abi.ElicitReply
				if reply, err = s.ev.Elicit(ctx, q.Elicitation()); err == nil {
					replies[i], err = json.Marshal(reply)
				}
			}
			if err != nil {
				failed[i], codes[i], replies[i] = true, elicitCode(err), json.RawMessage("null")
				if q.Method == "" || q.Method == abi.MethodElicit {
					replies[i] = json.RawMessage(`{"action":"cancel"}`)
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		exitOnDone(ctx)
	}
	if !slices.Contains(failed, false) {
		stack[0] = api.EncodeI32(codes[0])
		return
	}
	b, err := json.Marshal(replies)
	if err != nil || len(b) > math.MaxInt32 {
		stack[0] = api.EncodeI32(abi.ElicitUnsupported)
		return
	}
	s.reply = b
	stack[0] = api.EncodeI32(int32(len(b)))
}

// validQuestion reports whether q is a question the host may ask: a known
// method, a valid key if any, an elicitation's flat schema, sampling
// params that are an object, no params for roots.
func validQuestion(q *abi.Question) bool {
	if q.Key != "" && !abi.ValidInputKey(q.Key) {
		return false
	}
	switch q.Method {
	case "", abi.MethodElicit:
		return q.Params == nil && schema.CheckElicit(q.RequestedSchema) == nil
	case abi.MethodSample:
		return isJSONObject(q.Params) && q.Message == "" && q.RequestedSchema == nil
	case abi.MethodRoots:
		return (q.Params == nil || isJSONObject(q.Params)) && q.Message == "" && q.RequestedSchema == nil
	}
	return false
}

// code is c as the module understands it: a module built for ABI 1.0
// (it imports no 1.1 function) never sees 1.1's codes, and reads a limit
// as -1, as it always did.
func (s *callState) code(c int32) int32 {
	if c == abi.ElicitLimit && !s.abi11 {
		return abi.ElicitUnsupported
	}
	return c
}

// elicitCode is what elicit returns for an error of Events.Elicit.
func elicitCode(err error) int32 {
	switch {
	case errors.Is(err, abi.ErrElicitLimit):
		return abi.ElicitLimit
	case errors.Is(err, abi.ErrBadClientRequest):
		return abi.ElicitBadRequest
	}
	return abi.ElicitUnsupported
}

// hostSample asks the client's model for a message: the request is
// sampling/createMessage's params (at most maxElicitBytes, a JSON object;
// the MCP layer checks the rest). It returns the byte length of the reply
// (the client's result), copied with reply, or a negative abi.Elicit*
// code. It counts against the call's questions, as elicit does.
func hostSample(ctx context.Context, mod api.Module, stack []uint64) {
	if ctx.Err() != nil {
		exitOnDone(ctx)
	}
	raw := guestBytes(mod, abi.FuncSample, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]))
	if len(raw) > maxElicitBytes || !isJSONObject(raw) {
		stack[0] = api.EncodeI32(abi.ElicitBadRequest)
		return
	}
	key, req, ok := takeKey(raw)
	if !ok {
		stack[0] = api.EncodeI32(abi.ElicitBadRequest)
		return
	}
	askClient(ctx, stack, func(a abi.Asker) (json.RawMessage, error) { return a.Sample(ctx, key, req) })
}

// hostRoots asks the client for its roots, as hostSample asks for a
// message.
func hostRoots(ctx context.Context, _ api.Module, stack []uint64) {
	if ctx.Err() != nil {
		exitOnDone(ctx)
	}
	askClient(ctx, stack, func(a abi.Asker) (json.RawMessage, error) { return a.Roots(ctx, "") })
}

// askClient runs ask on the call's Events when they can ask the client,
// within the call's bounds on questions, and leaves the reply pending.
func askClient(ctx context.Context, stack []uint64, ask func(abi.Asker) (json.RawMessage, error)) {
	s := stateOf(ctx)
	var a abi.Asker
	if s != nil && s.notes != nil {
		a = s.notes.Asker()
	}
	if a == nil {
		stack[0] = api.EncodeI32(abi.ElicitUnsupported)
		return
	}
	if !s.mayElicit() {
		stack[0] = api.EncodeI32(abi.ElicitLimit)
		return
	}
	reply, err := ask(a)
	if ctx.Err() != nil {
		exitOnDone(ctx)
	}
	if err != nil {
		stack[0] = api.EncodeI32(elicitCode(err))
		return
	}
	if len(reply) > math.MaxInt32 {
		stack[0] = api.EncodeI32(abi.ElicitUnsupported)
		return
	}
	s.reply = reply
	stack[0] = api.EncodeI32(int32(len(reply)))
}

// takeKey splits a sample request, a JSON object, into its "key" member
// (ABI 1.2: the question's input key) and the params the client gets,
// a copy of raw without it. ok is false for an invalid key.
func takeKey(raw []byte) (key string, params json.RawMessage, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return "", nil, false
	}
	k, has := m["key"]
	if !has {
		return "", bytes.Clone(raw), true
	}
	if json.Unmarshal(k, &key) != nil || !abi.ValidInputKey(key) {
		return "", nil, false
	}
	delete(m, "key")
	params, err := json.Marshal(m)
	return key, params, err == nil
}

// isJSONObject reports whether b is one valid JSON object.
func isJSONObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// hostBeginTask makes the call a task when its Events can (a call of a
// tool with taskStart begin_task): 1 when the call is now a task, 0 when
// it goes on as it was. Once per call: later calls return the first
// answer.
func hostBeginTask(ctx context.Context, _ api.Module, stack []uint64) {
	if ctx.Err() != nil {
		exitOnDone(ctx)
	}
	s := stateOf(ctx)
	if s == nil || s.notes == nil {
		stack[0] = 0
		return
	}
	if !s.begun {
		s.begun, s.isTask = true, s.notes.BeginTask()
	}
	if ctx.Err() != nil {
		exitOnDone(ctx)
	}
	stack[0] = 0
	if s.isTask {
		stack[0] = 1
	}
}

// hostReply copies the pending elicit reply into [buf, buf+cap) and returns
// its length. When the reply does not fit it copies nothing and returns the
// length needed; with no pending reply it returns 0. The reply stays pending
// until the next elicit.
func hostReply(ctx context.Context, mod api.Module, stack []uint64) {
	if ctx.Err() != nil {
		exitOnDone(ctx) // the call is over: the guest goes no further
	}
	ptr, capacity := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	buf := guestBytes(mod, abi.FuncReply, ptr, capacity)
	s := stateOf(ctx)
	if s == nil || s.reply == nil {
		stack[0] = 0
		return
	}
	if len(s.reply) <= len(buf) {
		copy(buf, s.reply)
	}
	stack[0] = api.EncodeI32(int32(len(s.reply)))
}

// exitOnDone ends the running guest with the exit code wazero uses for the
// context's error.
func exitOnDone(ctx context.Context) {
	code := sys.ExitCodeContextCanceled
	if ctx.Err() == context.DeadlineExceeded {
		code = sys.ExitCodeDeadlineExceeded
	}
	panic(sys.NewExitError(code))
}
