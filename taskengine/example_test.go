package taskengine_test

import (
	"context"
	"fmt"
	"time"

	"github.com/wasmtask/wasmtask/taskengine"
)

func Example() {
	e, err := taskengine.New(taskengine.Config{MaxTTL: time.Hour})
	if err != nil {
		panic(err)
	}
	defer e.Close()

	// Submit returns at once; the work runs on its own context.
	task, err := e.Submit(context.Background(), "alice", taskengine.SubmitOptions{TTL: 2 * time.Hour}, func(ctx context.Context, run *taskengine.Run) taskengine.Outcome {
		run.SetProgress(1, 2, "asking")
		name, err := run.RequestInput(ctx, "What is your name?")
		if err != nil {
			return taskengine.Outcome{Err: err}
		}
		return taskengine.Outcome{Value: fmt.Sprintf("hello, %v", name), Size: 16}
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("submitted:", task.Status, "ttl:", task.TTL)

	// Another owner cannot see the task.
	_, err = e.Get(context.Background(), "mallory", task.ID)
	fmt.Println("mallory:", err)

	// Watch reports every status change, including input_required.
	sub, err := e.Watch(context.Background(), "alice", task.ID)
	if err != nil {
		panic(err)
	}
	defer sub.Stop()
	for s := range sub.C() {
		if s.Status == taskengine.StatusInputRequired {
			reqs, _ := e.PendingInput(context.Background(), "alice", task.ID)
			fmt.Println("input required:", reqs[0].Payload)
			e.Answer(context.Background(), "alice", task.ID, reqs[0].ID, "Alice")
			break
		}
	}

	final, out, err := e.Wait(context.Background(), "alice", task.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println("final:", final.Status, out.Value)
	// Output:
	// submitted: working ttl: 1h0m0s
	// mallory: taskengine: task not found
	// input required: What is your name?
	// final: completed hello, Alice
}
