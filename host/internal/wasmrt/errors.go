package wasmrt

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Load and Call wrap them with details.
var (
	// ErrClosed is returned by Load and Call after Close of the Runtime, and
	// by Call after Close of the Module.
	ErrClosed = errors.New("runtime closed")
	// ErrNotWasm means the bytes are not a WebAssembly binary module.
	ErrNotWasm = errors.New("not a WebAssembly module")
	// ErrComponent means the bytes are a WebAssembly component (the
	// component model's binary, as wasm32-wasip2 toolchains write), not a
	// core module: the tool needs another build.
	ErrComponent = errors.New("a WebAssembly component, not a core module")
	// ErrCompile means wazero refused to compile the module.
	ErrCompile = errors.New("cannot compile module")
	// ErrABI means the module does not follow the ABI: no _start export,
	// unknown or mistyped imports, an import module of another ABI version.
	// Manifest problems wrap abi.ErrManifest or abi.ErrVersion instead.
	ErrABI = errors.New("module does not follow the wasmtask ABI")
	// ErrSchema means a tool's inputSchema or outputSchema is refused: it
	// does not compile, or it passes a bound of the host (a reference
	// cycle, nesting, size, cost; see schema.go).
	ErrSchema = errors.New("invalid tool schema")
	// ErrTooLarge means that what the module would make the host allocate
	// or compute while it is loaded passes a bound (wasmcode.ErrTooLarge):
	// its code passes Config.MaxCodeMiB, one function body
	// wasmcode.MaxFunctionBytes, its compile work or one function's, or
	// what one instance of it takes passes its memory limit. It is refused
	// before the expensive step. errors.Is(err, ErrLoadLimit) holds too.
	ErrTooLarge error = &loadLimitSentinel{"module too large to load"}
	// ErrLoadLimit is matched by the error of every load that passed one
	// of its limits: ErrTooLarge, a describe or _initialize run that ended
	// at its deadline, its memory limit or its output limit, a load whose
	// deadline passed while it compiled, a snapshot larger than the whole
	// of Config.MaxSnapshotMiB. Such a load fails the same way again for
	// the same bytes and limits: a loader need not retry it until the
	// module's content (or the operator's limits) change.
	ErrLoadLimit = errors.New("load limit reached")
	// ErrSnapshotBudget means the module's snapshot does not fit in what
	// is left of Config.MaxSnapshotMiB: the snapshots of other loaded
	// modules hold the rest. It is not a fact about the module alone (it
	// may fit once other modules are closed), so it does not match
	// ErrLoadLimit; a snapshot larger than the whole budget does.
	ErrSnapshotBudget = errors.New("the server's snapshot budget is spent")
	// ErrUnknownTool means Call named a tool the manifest does not declare.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrAborted is wrapped by the error of a call ended by Module.Abort.
	ErrAborted = errors.New("module aborted")
	// ErrArguments is matched by an *ArgumentsError.
	ErrArguments = errors.New("invalid arguments")
)

// loadLimitSentinel is a sentinel error that also matches ErrLoadLimit.
type loadLimitSentinel struct{ msg string }

func (e *loadLimitSentinel) Error() string        { return e.msg }
func (e *loadLimitSentinel) Is(target error) bool { return target == ErrLoadLimit }

// tooLargeError is a refusal of the rewriter (wasmcode.ErrTooLarge) as
// the runtime reports it: matching ErrTooLarge and ErrLoadLimit; its text
// is err's.
type tooLargeError struct{ err error }

func (e *tooLargeError) Error() string { return e.err.Error() }
func (e *tooLargeError) Unwrap() error { return e.err }
func (e *tooLargeError) Is(target error) bool {
	return target == ErrTooLarge || target == ErrLoadLimit
}

// loadLimitError marks err, the failure of a load at one of its limits, as
// matching ErrLoadLimit; its text is err's.
type loadLimitError struct{ err error }

func (e *loadLimitError) Error() string        { return e.err.Error() }
func (e *loadLimitError) Unwrap() error        { return e.err }
func (e *loadLimitError) Is(target error) bool { return target == ErrLoadLimit }

// atLoadLimit returns err marked as matching ErrLoadLimit when it is a
// guest run that ended at one of its limits (time, memory, output), and
// err itself otherwise.
func atLoadLimit(err *GuestError) error {
	switch err.Kind {
	case KindTimeout, KindOutOfMemory, KindOutputTooLarge:
		return &loadLimitError{err}
	}
	return err
}

// ArgumentsError is the error of a call whose arguments are not a JSON
// object or do not match the tool's input schema. The guest is not run.
// errors.Is(err, ErrArguments) holds.
type ArgumentsError struct {
	Tool   string
	Detail string // what is wrong, from the schema validator
}

func (e *ArgumentsError) Error() string {
	return fmt.Sprintf("invalid arguments for tool %q: %s", e.Tool, e.Detail)
}

// Is reports whether target is ErrArguments.
func (e *ArgumentsError) Is(target error) bool { return target == ErrArguments }

// Kind classifies why a guest call failed.
type Kind string

// Kinds of GuestError.
const (
	KindTrap           Kind = "trap"             // the guest trapped (unreachable, bad memory access, bad host call…)
	KindExit           Kind = "exit"             // the guest exited with a non-zero code
	KindTimeout        Kind = "timeout"          // the call's wall-clock limit passed
	KindCanceled       Kind = "canceled"         // the caller's context was canceled
	KindOutOfMemory    Kind = "out of memory"    // the guest asked for more memory than its limit
	KindBadOutput      Kind = "bad output"       // exit 0 but stdout is not a valid answer
	KindOutputTooLarge Kind = "output too large" // stdout passed the output limit, or the result its counts
	KindInstantiate    Kind = "instantiate"      // the instance could not be created
)

// GuestError is the error of a call whose guest failed. It fails that call
// only; the Module stays usable.
//
// errors.Is(err, context.Canceled) holds for KindCanceled and
// errors.Is(err, context.DeadlineExceeded) for KindTimeout.
type GuestError struct {
	Module string // module name given to Load
	Tool   string // tool name, or "describe" while loading
	Kind   Kind
	Msg    string // the cause, one or a few lines
	Stderr string // tail of the guest's stderr (bounded), may be empty
	cause  error
}

// stderrInError is how much of the stderr tail Error() quotes.
const stderrInError = 512

func (e *GuestError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "module %q tool %q: %s", e.Module, e.Tool, e.Kind)
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		if len(s) > stderrInError {
			s = "…" + s[len(s)-stderrInError:]
		}
		b.WriteString("; stderr: ")
		b.WriteString(s)
	}
	return b.String()
}

// Is maps KindCanceled to context.Canceled and KindTimeout to
// context.DeadlineExceeded.
func (e *GuestError) Is(target error) bool {
	switch e.Kind {
	case KindCanceled:
		return target == context.Canceled
	case KindTimeout:
		return target == context.DeadlineExceeded
	}
	return false
}

// Unwrap returns the underlying cause, if any (for example ErrClosed).
func (e *GuestError) Unwrap() error { return e.cause }
