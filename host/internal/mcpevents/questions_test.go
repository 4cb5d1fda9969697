package mcpevents

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/taskengine"
)

// A waiter whose client did not declare what a task asks is not sent the
// question: it stays pending, unclaimed, for a waiter whose client did.
// (deliver is given no session: sending it anything would panic.)
func TestDeliverSkipsWhatTheClientCannotAnswer(t *testing.T) {
	e, err := taskengine.New(taskengine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	questions := []abi.Question{
		{Method: abi.MethodSample, Params: json.RawMessage(`{"messages":[],"maxTokens":5}`)},
		{Method: abi.MethodRoots},
		{Method: abi.MethodElicit, Message: "Which colour?"},
	}
	var ids []string
	for _, q := range questions {
		task, err := e.Submit(ctx, "alice", taskengine.SubmitOptions{}, func(ctx context.Context, r *taskengine.Run) taskengine.Outcome {
			_, err := r.RequestInput(ctx, q)
			return taskengine.Outcome{Err: err}
		})
		if err != nil {
			t.Fatal(err)
		}
		sub, err := e.Watch(ctx, "alice", task.ID)
		if err != nil {
			t.Fatal(err)
		}
		for s := range sub.C() {
			if s.Status == taskengine.StatusInputRequired {
				break
			}
		}
		sub.Stop()
		ids = append(ids, task.ID)
	}
	cannot := []Can{{Elicit: true, Roots: true}, {Elicit: true, Sample: true}, {Sample: true, Roots: true}}
	var w Waiters
	for i, id := range ids {
		var wg sync.WaitGroup
		w.deliver(ctx, e, nil, cannot[i], "alice", id, &wg)
		wg.Wait()
		pending, err := e.PendingInput(ctx, "alice", id)
		if err != nil || len(pending) != 1 {
			t.Errorf("%s: pending input after a waiter that cannot answer it: %v, %v; want the question still pending", questions[i].Method, pending, err)
		}
		if len(w.busy) != 0 {
			t.Errorf("%s: claimed by a waiter that cannot answer it: %v", questions[i].Method, w.busy)
		}
	}
}

func TestCanAnswers(t *testing.T) {
	for _, tc := range []struct {
		can  Can
		q    abi.Question
		want bool
	}{
		{Can{Sample: true}, abi.Question{Method: abi.MethodSample}, true},
		{Can{Elicit: true, Roots: true}, abi.Question{Method: abi.MethodSample}, false},
		{Can{Roots: true}, abi.Question{Method: abi.MethodRoots}, true},
		{Can{Elicit: true, Sample: true}, abi.Question{Method: abi.MethodRoots}, false},
		{Can{Elicit: true}, abi.Question{Method: abi.MethodElicit}, true},
		{Can{Elicit: true}, abi.Question{}, true}, // a pre-1.2 question is an elicitation
		{Can{Sample: true, Roots: true}, abi.Question{}, false},
	} {
		if got := tc.can.answers(tc.q); got != tc.want {
			t.Errorf("%+v answers %q: got %v, want %v", tc.can, tc.q.Method, got, tc.want)
		}
	}
}
