package mcpevents

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
)

// A key names one question: asked again as another kind of question, it
// is refused as a bad request, and the round's open question stays.
func TestRoundKeyNamesOneKind(t *testing.T) {
	c := Client{CanElicit: true, CanSample: true, Log: slog.New(slog.DiscardHandler)}
	r := NewRound(c, "t", map[string]json.RawMessage{}, nil, func() {}, nil)
	ctx := context.Background()
	q := abi.ElicitRequest{Key: "x", Message: "name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}
	if _, err := r.Elicit(ctx, q); !errors.Is(err, errNeedsInput) {
		t.Fatalf("an unanswered question: %v, want it open", err)
	}
	if _, err := r.Sample(ctx, "x", json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}`)); !errors.Is(err, abi.ErrBadClientRequest) {
		t.Errorf("the key of an elicitation reused for sampling: %v, want ErrBadClientRequest", err)
	}
	if _, err := r.Sample(ctx, "y", json.RawMessage(`{"messages":[],"maxTokens":5}`)); !errors.Is(err, abi.ErrBadClientRequest) {
		t.Errorf("sampling without messages: %v, want ErrBadClientRequest", err)
	}
	open, _, _ := r.Ended()
	if len(open) != 1 || open["x"].Method != abi.MethodElicit {
		t.Errorf("open questions = %v, want x, the elicitation", open)
	}
}
