package guest

import (
	"encoding/json"
	"reflect"

	"github.com/wasmtask/wasmtask/abi"
)

// Warming: encoding/json builds, on the first use of each type, the list
// of its fields and its encoder (by reflection, cached for the life of the
// process). In a fresh instance per call that first use is every use, and
// it costs a Go tool most of a call. A pre-initialised module (the
// wasmtask_preinit build, ABI.md section 13) keeps what its initialisers
// leave, so under that build the SDK fills those caches during
// _initialize: for the SDK's own message types when the package
// initialises (warmSDK), for each handler's argument type when [Handle]
// builds the handler, and for the types a tool names with [Warm]. The
// caches hold types, not values: no call's data is in them, and each call
// starts from the same snapshot anyway.

// warmSDK fills encoding/json's caches for the messages every call reads
// and writes: the request, the result (every member set, so that every
// field's encoder is built), and the elicitation messages.
func warmSDK() {
	var req abi.Request
	_ = json.Unmarshal([]byte(`{"abi":1,"method":"call","tool":"t","arguments":{"a":1}}`), &req)
	_, _ = json.Marshal(Result{
		Content:           []abi.Content{{Type: "text", Text: "t", Data: "d", MIMEType: "m"}},
		StructuredContent: json.RawMessage(`{"a":1}`),
		IsError:           true,
		Error:             &abi.ProtocolError{Code: -32602, Message: "m"},
	})
	_, _ = json.Marshal([]abi.ElicitRequest{{Message: "m", RequestedSchema: json.RawMessage(`{}`)}})
	var replies []abi.ElicitReply
	_ = json.Unmarshal([]byte(`[{"action":"accept","content":{"a":1}}]`), &replies)
}

// warmType fills encoding/json's caches for T: it encodes a zero T and
// decodes the result into another, which builds the field lists and
// encoders of T and of every type reachable from its fields. A MarshalJSON
// or UnmarshalJSON method of those types runs on zero values; whatever it
// does, a failure or a panic here is ignored (the call itself will report
// it).
func warmType[T any]() {
	defer func() { _ = recover() }()
	var v T
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	var w T
	_ = json.Unmarshal(b, &w)
}

// Warm fills encoding/json's caches for the types of values, as [Handle]
// does for a handler's argument type: give it the types a handler encodes
// or decodes itself, such as what it passes to [Structured]. Call it from
// an init function or a package-level variable's initialiser. It has an
// effect only there and only in a pre-initialised build (tag
// wasmtask_preinit), where initialisers run once, at load; elsewhere, and
// once main runs, it does nothing, since every call would pay for it. The
// values are encoded (and the encoding decoded back into a new value of
// the same type): pass zero values, or values whose encoding has no side
// effect. Failures and panics of that encoding are ignored.
func Warm(values ...any) {
	if !warming() {
		return
	}
	for _, v := range values {
		warmValue(v)
	}
}

func warmValue(v any) {
	defer func() { _ = recover() }()
	b, err := json.Marshal(v)
	if err != nil || v == nil {
		return
	}
	_ = json.Unmarshal(b, reflect.New(reflect.TypeOf(v)).Interface())
}
