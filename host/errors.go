package host

import (
	"errors"

	"github.com/wasmtask/wasmtask/host/internal/admission"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
)

// Errors of a call (they are wrapped; use errors.Is).
var (
	// ErrUnknownTool: no tool of that name is served.
	ErrUnknownTool = errors.New("host: unknown tool")
	// ErrUnknownResource: no resource or resource template serves the URI
	// ([Server.ReadResource]).
	ErrUnknownResource = errors.New("host: unknown resource")
	// ErrUnknownPrompt: no prompt of that name is served
	// ([Server.GetPrompt]).
	ErrUnknownPrompt = errors.New("host: unknown prompt")
	// ErrBusy: the tool, its module or the server already runs and queues
	// as many calls as the policy allows.
	ErrBusy = admission.ErrBusy
	// ErrMemoryBudget: one call of the tool reserves more memory than the
	// server's whole budget (Policy.MemoryBudgetMiB), so it could never
	// start; it fails at once.
	ErrMemoryBudget = admission.ErrMemoryBudget
	// ErrArguments: the arguments are not a JSON object or do not match the
	// tool's input schema; the guest did not run. The error is an
	// *ArgumentsError.
	ErrArguments = wasmrt.ErrArguments
	// ErrModuleRemoved: the tool's module was removed or replaced while the
	// call ran, and the operator asked for such calls to end
	// (Config.CancelRemoved).
	ErrModuleRemoved = wasmrt.ErrAborted
)

// GuestError is the error of a call whose guest failed: it names the
// module, the tool, the kind of failure and its cause, with the tail of the
// guest's stderr. It fails that call only.
type GuestError = wasmrt.GuestError

// ArgumentsError is the error of a call whose arguments the tool's input
// schema refuses.
type ArgumentsError = wasmrt.ArgumentsError

// GuestErrorKind classifies a GuestError.
type GuestErrorKind = wasmrt.Kind

// Kinds of GuestError.
const (
	KindTrap           = wasmrt.KindTrap
	KindExit           = wasmrt.KindExit
	KindTimeout        = wasmrt.KindTimeout
	KindCanceled       = wasmrt.KindCanceled
	KindOutOfMemory    = wasmrt.KindOutOfMemory
	KindBadOutput      = wasmrt.KindBadOutput
	KindOutputTooLarge = wasmrt.KindOutputTooLarge
	KindInstantiate    = wasmrt.KindInstantiate
)

// Errors of loading a module, wrapped by the Err of a [Problem].
var (
	ErrNotWasm   = wasmrt.ErrNotWasm   // not a WebAssembly binary
	ErrComponent = wasmrt.ErrComponent // a component-model binary, not a core module
	ErrCompile   = wasmrt.ErrCompile   // wazero cannot compile it
	ErrModuleABI = wasmrt.ErrABI       // no _start, unknown or mistyped wasmtask_v1 import, foreign import
	ErrSchema    = wasmrt.ErrSchema    // a tool's input or output schema is refused
	// ErrLoadLimit: the load passed one of its limits — what the module
	// would cost to compile or to instantiate (Policy.MaxCodeMiB, its
	// tools' memoryMiB), describe or _initialize at their time, memory or
	// output limit, the load timeout — or its snapshot is larger than the
	// whole snapshot budget. The same bytes fail the same way under the
	// same policy.
	ErrLoadLimit = wasmrt.ErrLoadLimit
	// ErrSnapshotBudget: the module's snapshot does not fit what the
	// snapshots of other loaded modules leave of the snapshot budget
	// ([Limits].SnapshotBudgetMiB).
	ErrSnapshotBudget = wasmrt.ErrSnapshotBudget
)
