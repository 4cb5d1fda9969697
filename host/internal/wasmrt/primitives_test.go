package wasmrt

import (
	"context"
	"errors"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
)

// TestPrimitives: an ABI 1.2 module's resources, templates and prompts
// load with it, and each read, prompt and completion runs in a fresh
// instance and is decoded as its kind of answer; an invalid answer is a
// bad-output failure, and a module that declares none of them is refused
// such requests before any instance runs.
func TestPrimitives(t *testing.T) {
	r := newRuntime(t, Config{})
	m := load(t, r, "prims")
	man := m.Manifest()
	if len(man.Resources) != 1 || len(man.ResourceTemplates) != 1 || len(man.Prompts) != 1 || len(man.Tools) != 1 {
		t.Fatalf("manifest %+v", man)
	}
	ctx := context.Background()
	before := m.Instantiations()
	read, err := m.Read(ctx, "test://static", "", nil, testLimits)
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "static" {
		t.Errorf("Read = %+v, %v", read, err)
	}
	pr, err := m.Prompt(ctx, "greet", map[string]string{"who": "you"}, testLimits, &events{})
	if err != nil || len(pr.Messages) != 1 || pr.Messages[0].Content.Text != "hi" {
		t.Errorf("Prompt = %+v, %v", pr, err)
	}
	cr, err := m.Complete(ctx, abi.CompleteRef{Type: abi.RefPrompt, Name: "greet"}, abi.CompleteArgument{Name: "who", Value: "o"}, nil, testLimits)
	if err != nil || len(cr.Values) != 2 || cr.Total != 2 {
		t.Errorf("Complete = %+v, %v", cr, err)
	}
	if n := m.Instantiations() - before; n != 3 {
		t.Errorf("%d instances for three requests, want 3", n)
	}
	_, err = m.Read(ctx, "test://items/x1", "test://items/{id}", map[string]string{"id": "x1"}, testLimits)
	var ge *GuestError
	if !errors.As(err, &ge) || ge.Kind != KindBadOutput {
		t.Errorf("Read with an invalid answer = %v, want a bad-output GuestError", err)
	}

	tools := load(t, r, "ok")
	before = tools.Instantiations()
	if _, err := tools.Read(ctx, "test://static", "", nil, testLimits); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("Read of a module without resources = %v, want ErrUnknownTool", err)
	}
	if n := tools.Instantiations() - before; n != 0 {
		t.Errorf("%d instances ran for a refused read", n)
	}
}
