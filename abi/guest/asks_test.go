package guest

import (
	"errors"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
)

// Sample sends MCP's params and reads the client's result; Roots reads
// the roots; the host's codes become the package's errors.
func TestSampleAndRoots(t *testing.T) {
	h := &fakeHost{reply: `{"role":"assistant","content":{"type":"text","text":"four"},"model":"m","stopReason":"endTurn"}`}
	c := &Call{host: h}
	got, err := c.SampleText("2+2?", 10)
	if err != nil || got != "four" {
		t.Fatalf("SampleText = %q, %v; want four", got, err)
	}
	if want := `{"messages":[{"role":"user","content":{"type":"text","text":"2+2?"}}],"maxTokens":10}`; h.elicited[0] != want {
		t.Errorf("request sent:\n%s\nwant\n%s", h.elicited[0], want)
	}
	h.reply = `{"roots":[{"uri":"file:///work","name":"work"}]}`
	roots, err := c.Roots()
	if err != nil || len(roots) != 1 || roots[0] != (Root{URI: "file:///work", Name: "work"}) {
		t.Errorf("Roots = %v, %v", roots, err)
	}
	for code, want := range map[int32]error{abi.ElicitUnsupported: ErrElicitUnsupported, abi.ElicitBadRequest: ErrElicitBadRequest, abi.ElicitLimit: ErrElicitLimit} {
		h.replyCode = code
		if _, err := c.SampleText("x", 1); !errors.Is(err, want) {
			t.Errorf("code %d: Sample error %v, want %v", code, err, want)
		}
		if _, err := c.Roots(); !errors.Is(err, want) {
			t.Errorf("code %d: Roots error %v, want %v", code, err, want)
		}
	}
}
