package guest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/wasmtask/wasmtask/abi"
)

// Errors of [Call.Elicit].
var (
	// ErrElicitUnsupported: nobody can answer input requests in this call
	// (the client cannot, the call is not a task, or the host has no
	// elicitation). The tool should go on without the answer or fail.
	ErrElicitUnsupported = errors.New("guest: nobody can answer input requests in this call")
	// ErrElicitBadRequest: the host refused the request (invalid schema).
	ErrElicitBadRequest = errors.New("guest: invalid elicitation request")
	// ErrElicitLimit: a limit on questions (per call, session or task)
	// refused this one; the tool should go on without it or fail.
	ErrElicitLimit = errors.New("guest: the limit on input requests was reached")
	// ErrElicitReply: the reply did not decode (into the answer's type).
	ErrElicitReply = errors.New("guest: invalid elicitation reply")
)

// Action is the user's answer to an elicitation.
type Action string

// Actions of an elicitation reply.
const (
	Accept  Action = "accept"  // the user answered; the content was decoded
	Decline Action = "decline" // the user said no
	Cancel  Action = "cancel"  // the user dismissed the request
)

// Level is the level of a log line.
type Level int32

// Log levels.
const (
	LevelDebug   = Level(abi.LogDebug)
	LevelInfo    = Level(abi.LogInfo)
	LevelWarning = Level(abi.LogWarning)
	LevelError   = Level(abi.LogError)
)

func (l Level) String() string {
	switch l {
	case LevelDebug:
		return "debug"
	case LevelInfo:
		return "info"
	case LevelWarning:
		return "warning"
	case LevelError:
		return "error"
	}
	return fmt.Sprintf("level(%d)", int32(l))
}

// Call is the running call of a tool, given to its handler: it reports
// progress, status and logs, and asks the user for input. It is safe for
// concurrent use by the handler's goroutines.
type Call struct {
	tool string
	host host
	logw io.Writer // stderr; the fallback log of hosts without log
	mu   sync.Mutex
}

// Tool returns the name of the tool being called.
func (c *Call) Tool() string { return c.tool }

// Progress reports that done units of total are finished, with an optional
// message. total ≤ 0 means the total is unknown. done should grow with every
// report. Without a progress token from the client, the report is dropped.
func (c *Call) Progress(done, total float64, message string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.host.progress(done, total, message)
}

// Status sets the short status message of the call (for a task: its
// statusMessage); "" clears it.
func (c *Call) Status(message string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.host.status(message)
}

// Log writes a log line at level to the host's log.
func (c *Call) Log(level Level, message string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.host.log(int32(level), message) {
		fmt.Fprintf(c.logw, "%s: %s\n", level, message)
	}
}

// Logf is Log with fmt.Sprintf formatting.
func (c *Call) Logf(level Level, format string, args ...any) {
	c.Log(level, fmt.Sprintf(format, args...))
}

// Elicit asks the user for input and waits for the answer. schema is the
// requested schema as JSON text: a flat object schema whose properties are
// strings, numbers, integers, booleans or enums ("" asks for a bare
// confirmation). On [Accept] the answer's content is decoded into answer (a
// pointer, or nil to ignore it). [Decline] and [Cancel] leave answer
// untouched. While it waits, the call's task is input_required; if the task
// is cancelled meanwhile, the host ends the instance and Elicit never
// returns.
func (c *Call) Elicit(message, schema string, answer any) (Action, error) {
	if schema == "" {
		schema = `{"type":"object","properties":{}}`
	}
	if !json.Valid([]byte(schema)) {
		return "", fmt.Errorf("%w: the schema is not valid JSON", ErrElicitBadRequest)
	}
	req, err := json.Marshal(abi.ElicitRequest{Message: message, RequestedSchema: json.RawMessage(schema)})
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrElicitBadRequest, err)
	}
	c.mu.Lock()
	b, code := c.host.elicit(req)
	c.mu.Unlock()
	switch {
	case code == abi.ElicitBadRequest:
		return "", fmt.Errorf("%w: the host refused it", ErrElicitBadRequest)
	case code == abi.ElicitUnsupported:
		return "", ErrElicitUnsupported
	case code == abi.ElicitLimit:
		return "", ErrElicitLimit
	case code < 0:
		return "", fmt.Errorf("%w (code %d)", ErrElicitUnsupported, code)
	}
	var reply abi.ElicitReply
	if err := json.Unmarshal(b, &reply); err != nil {
		return "", fmt.Errorf("%w: %v", ErrElicitReply, err)
	}
	switch a := Action(reply.Action); a {
	case Accept:
		if answer != nil && len(reply.Content) > 0 {
			if err := json.Unmarshal(reply.Content, answer); err != nil {
				return "", fmt.Errorf("%w: %v", ErrElicitReply, err)
			}
		}
		return a, nil
	case Decline, Cancel:
		return a, nil
	default:
		return "", fmt.Errorf("%w: unknown action %q", ErrElicitReply, reply.Action)
	}
}

// host is the set of host functions a Call uses: the Wasm imports on
// wasip1, stubs elsewhere, fakes in tests.
type host interface {
	progress(done, total float64, msg string)
	status(msg string)
	// log reports false when the host has no log function.
	log(level int32, msg string) bool
	// elicit returns the reply JSON, or a negative code and no reply.
	elicit(req []byte) ([]byte, int32)
	// elicitAll is elicit for a JSON array of requests (ABI 1.1).
	elicitAll(req []byte) ([]byte, int32)
	// beginTask is the begin_task import (ABI 1.1).
	beginTask() bool
	// sample and roots are the sample and roots imports (ABI 1.2): the
	// reply JSON, or a negative code and no reply.
	sample(req []byte) ([]byte, int32)
	roots() ([]byte, int32)
}

// BeginTask makes the call a task, for a tool whose TaskStart is
// abi.TaskStartBegin: under MCP 2026-07-28 the client gets the task's
// handle now and the handler goes on in the background. It reports
// whether the call is a task (always true for a call that started as
// one; false for a plain call, which simply goes on). Ask the questions
// the work needs before it: a 2026-07-28 client answers questions asked
// before BeginTask by calling the tool again, and the host runs the
// handler again from the start with the answers, so nothing before
// BeginTask should change the world.
func (c *Call) BeginTask() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.host.beginTask()
}

// Question is one question of [Call.ElicitAll]: a message and a flat
// requested schema as JSON text, as for [Call.Elicit]; or, from ABI 1.2,
// a request for a message from the client's model (Sample) or for its
// roots (Roots). Key, optional, names the question in a 2026-07-28 input
// round (the client answers inputResponses[Key]); 1 to 64 of A-Z a-z 0-9
// _ . -, one per question of a call.
type Question struct {
	Key     string
	Message string
	Schema  string
	Sample  *SampleRequest
	Roots   bool
}

// Answer is the client's answer to one [Question]. For an elicitation:
// Action, and on [Accept] Content, the answer's JSON object. For a
// sampling question Sample, for a roots question Roots, with Action
// [Accept]; a question the client could not take has Action [Cancel].
type Answer struct {
	Action  Action
	Content json.RawMessage
	Sample  *SampleResult
	Roots   []Root
}

// ElicitAll asks up to abi.MaxElicitAll questions at once (the client sees
// them pending together) and waits until all are answered. It needs a host
// with ABI 1.1 (the elicit_all import; 1.2 for sampling and roots
// questions); its errors are those of [Call.Elicit].
func (c *Call) ElicitAll(questions ...Question) ([]Answer, error) {
	reqs := make([]abi.Question, len(questions))
	for i, q := range questions {
		r := abi.Question{Key: q.Key}
		switch {
		case q.Sample != nil:
			params, err := json.Marshal(q.Sample)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrElicitBadRequest, err)
			}
			r.Method, r.Params = abi.MethodSample, params
		case q.Roots:
			r.Method = abi.MethodRoots
		default:
			if q.Schema == "" {
				q.Schema = `{"type":"object","properties":{}}`
			}
			if !json.Valid([]byte(q.Schema)) {
				return nil, fmt.Errorf("%w: the schema of question %d is not valid JSON", ErrElicitBadRequest, i)
			}
			r.Message, r.RequestedSchema = q.Message, json.RawMessage(q.Schema)
		}
		reqs[i] = r
	}
	req, err := json.Marshal(reqs)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrElicitBadRequest, err)
	}
	c.mu.Lock()
	b, code := c.host.elicitAll(req)
	c.mu.Unlock()
	switch {
	case code == abi.ElicitBadRequest:
		return nil, fmt.Errorf("%w: the host refused it", ErrElicitBadRequest)
	case code == abi.ElicitLimit:
		return nil, ErrElicitLimit
	case code < 0:
		return nil, ErrElicitUnsupported
	}
	var replies []json.RawMessage
	if err := json.Unmarshal(b, &replies); err != nil || len(replies) != len(questions) {
		return nil, fmt.Errorf("%w: not %d replies", ErrElicitReply, len(questions))
	}
	out := make([]Answer, len(replies))
	for i, raw := range replies {
		a, err := answerOf(questions[i], raw)
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

// answerOf reads the reply to q.
func answerOf(q Question, raw json.RawMessage) (Answer, error) {
	if string(raw) == "null" {
		return Answer{Action: Cancel}, nil
	}
	switch {
	case q.Sample != nil:
		var res SampleResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return Answer{}, fmt.Errorf("%w: %v", ErrElicitReply, err)
		}
		return Answer{Action: Accept, Sample: &res}, nil
	case q.Roots:
		var res struct {
			Roots []Root `json:"roots"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return Answer{}, fmt.Errorf("%w: %v", ErrElicitReply, err)
		}
		return Answer{Action: Accept, Roots: res.Roots}, nil
	}
	var r abi.ElicitReply
	if err := json.Unmarshal(raw, &r); err != nil {
		return Answer{}, fmt.Errorf("%w: %v", ErrElicitReply, err)
	}
	switch a := Action(r.Action); a {
	case Accept, Decline, Cancel:
		return Answer{Action: a, Content: r.Content}, nil
	default:
		return Answer{}, fmt.Errorf("%w: unknown action %q", ErrElicitReply, r.Action)
	}
}
