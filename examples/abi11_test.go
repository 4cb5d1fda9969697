package examples_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
)

// askedTwice is the abi.Events of a call that may become a task: it
// answers each question with an answer of its own and says yes to
// begin_task.
type askedTwice struct {
	mu     sync.Mutex
	asked  []string
	begun  int
	open   int // questions waiting for an answer
	atOnce int // the most that waited together
	both   chan struct{}
}

func (e *askedTwice) Progress(float64, float64, string) {}
func (e *askedTwice) Status(string)                     {}
func (e *askedTwice) Log(int32, string)                 {}
func (e *askedTwice) BeginTask() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.begun++
	return true
}

// Elicit holds every question until two are waiting together: elicit_all
// must ask them at once, or the call never ends (the test's deadline).
func (e *askedTwice) Elicit(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	e.mu.Lock()
	e.asked = append(e.asked, req.Message)
	e.open++
	e.atOnce = max(e.atOnce, e.open)
	if e.open == 2 {
		close(e.both)
	}
	e.mu.Unlock()
	select {
	case <-e.both:
	case <-ctx.Done():
		return abi.ElicitReply{}, ctx.Err()
	}
	if strings.HasPrefix(req.Message, "Enter") {
		return abi.ElicitReply{Action: "accept", Content: json.RawMessage(`{"name":"C"}`)}, nil
	}
	return abi.ElicitReply{Action: "accept", Content: json.RawMessage(`{"confirm":true}`)}, nil
}

// TestABI11InC builds examples/c/abi11.c with ABI.md's C command and calls
// its tools through the host: two questions pending at once, begin_task,
// and a protocol error.
func TestABI11InC(t *testing.T) {
	src, err := os.ReadFile("c/abi11.c")
	if err != nil {
		t.Fatal(err)
	}
	srv := serveModule(t, "abi11.wasm", buildC(t, abiMD(t), src, "wasmtask.h"))

	ev := &askedTwice{both: make(chan struct{})}
	res, err := srv.Call(context.Background(), "two_questions", nil, ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `task=1 answers=[{"action":"accept","content":{"name":"C"}},{"action":"accept","content":{"confirm":true}}]`
	if res.IsError || len(res.Content) != 1 || res.Content[0].Text != want {
		t.Errorf("two_questions = %+v, want the text %s", res, want)
	}
	if ev.atOnce != 2 || ev.begun != 1 || len(ev.asked) != 2 {
		t.Errorf("questions at once %d (want 2), begin_task %d (want 1), asked %q", ev.atOnce, ev.begun, ev.asked)
	}

	res, err = srv.Call(context.Background(), "unavailable", nil, nil)
	if err != nil || res.Error == nil || res.Error.Code != -32603 || res.Error.Message != "the backing store is unreachable" {
		t.Errorf("unavailable = %+v, %v; want the protocol error -32603", res, err)
	}
	var ge *host.GuestError
	if errors.As(err, &ge) {
		t.Errorf("a protocol error is an outcome, not a guest failure: %v", ge)
	}
}
