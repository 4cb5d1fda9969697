// Command conformance is the wasmtask tool module that the official MCP
// conformance suite (@modelcontextprotocol/conformance) calls: the fixture
// tools, resources, resource template and prompts its scenarios name, with
// the behaviour each scenario checks, written with the Go guest SDK like any
// other module.
//
// Build it with the other examples (from the repository root):
//
//	examples/build.sh -o examples/conformance/tools conformance
//
// and serve it:
//
//	wasmtask serve --http 127.0.0.1:8080 --tools examples/conformance/tools
package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/abi/guest"
)

func main() {
	guest.Module{
		Name:      "conformance",
		Tools:     slices.Concat([]guest.Tool{greet, slowCompute, failingJob, protocolErrorJob, confirmDelete, multiInput, toolWithTask}, coreTools, roundTools, statelessTools),
		Resources: resources,
		Templates: templates,
		Prompts:   append(prompts, roundPrompt),
	}.Run()
}

// sleep waits d in short steps: each wake-up is a point where a cancelled
// call stops, whatever host runs the module (see examples/go/demo).
func sleep(d time.Duration) {
	const step = 20 * time.Millisecond
	for d > 0 {
		s := min(d, step)
		time.Sleep(s)
		d -= s
	}
}

var greet = guest.Tool{
	Name:        "greet",
	Description: "Greets someone by name; never runs as a task.",
	InputSchema: `{"type":"object","properties":{"name":{"type":"string","description":"Name to greet"}},"required":["name"]}`,
	TaskSupport: abi.TaskForbidden,
	Handler: guest.Handle(func(_ *guest.Call, in struct {
		Name string `json:"name"`
	}) (guest.Result, error) {
		return guest.Textf("Hello, %s!", in.Name), nil
	}),
}

var slowCompute = guest.Tool{
	Name:        "slow_compute",
	Description: "Waits the given number of seconds, then answers; runs as a task when the client allows.",
	InputSchema: `{"type":"object","properties":{"seconds":{"type":"integer","minimum":0,"maximum":600,"default":3},` +
		`"label":{"type":"string","default":"default"}}}`,
	TaskSupport: abi.TaskOptional,
	Grants:      &abi.Grants{TimeoutMs: 11 * 60 * 1000},
	Handler: guest.Handle(func(c *guest.Call, in struct {
		Seconds *int   `json:"seconds"`
		Label   string `json:"label"`
	}) (guest.Result, error) {
		seconds := 3
		if in.Seconds != nil {
			seconds = *in.Seconds
		}
		if in.Label == "" {
			in.Label = "default"
		}
		for i := range seconds {
			c.Progress(float64(i), float64(seconds), "computing")
			sleep(time.Second)
		}
		return guest.Textf("Computation %q completed after %d seconds. Result: 42.", in.Label, seconds), nil
	}),
}

var failingJob = guest.Tool{
	Name:        "failing_job",
	Description: "Runs for a second, then fails with a tool error; runs only as a task.",
	InputSchema: `{"type":"object"}`,
	TaskSupport: abi.TaskRequired,
	Handler: func(*guest.Call, json.RawMessage) (guest.Result, error) {
		sleep(time.Second)
		return guest.Result{}, fmt.Errorf("simulated failure: job crashed")
	},
}

var protocolErrorJob = guest.Tool{
	Name:        "protocol_error_job",
	Description: "Runs for half a second, then ends with a JSON-RPC error instead of a result; runs only as a task.",
	InputSchema: `{"type":"object"}`,
	TaskSupport: abi.TaskRequired,
	Handler: func(*guest.Call, json.RawMessage) (guest.Result, error) {
		sleep(500 * time.Millisecond)
		return guest.ProtocolError(-32603, "simulated protocol error"), nil
	},
}

const confirmSchema = `{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}`

var confirmDelete = guest.Tool{
	Name:        "confirm_delete",
	Description: "Asks the user to confirm deleting a file (nothing is deleted); runs only as a task.",
	InputSchema: `{"type":"object","properties":{"filename":{"type":"string","default":"important.txt"}}}`,
	TaskSupport: abi.TaskRequired,
	Handler: guest.Handle(func(c *guest.Call, in struct {
		Filename string `json:"filename"`
	}) (guest.Result, error) {
		if in.Filename == "" {
			in.Filename = "important.txt"
		}
		var answer struct {
			Confirm bool `json:"confirm"`
		}
		action, err := c.Elicit(fmt.Sprintf("Delete '%s'?", in.Filename), confirmSchema, &answer)
		if err != nil {
			return guest.Result{}, err
		}
		if action == guest.Accept && answer.Confirm {
			return guest.Textf("deleted '%s'", in.Filename), nil
		}
		return guest.Textf("kept '%s'", in.Filename), nil
	}),
}

var multiInput = guest.Tool{
	Name:        "multi_input",
	Description: "Asks two questions at once (a name and a confirmation); runs only as a task.",
	InputSchema: `{"type":"object"}`,
	TaskSupport: abi.TaskRequired,
	Handler: func(c *guest.Call, _ json.RawMessage) (guest.Result, error) {
		answers, err := c.ElicitAll(
			guest.Question{Message: "Enter your name:", Schema: `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`},
			guest.Question{Message: "Confirm action?", Schema: confirmSchema},
		)
		if err != nil {
			return guest.Result{}, err
		}
		var name struct {
			Name string `json:"name"`
		}
		var confirm struct {
			Confirm bool `json:"confirm"`
		}
		if answers[0].Action == guest.Accept {
			_ = json.Unmarshal(answers[0].Content, &name)
		}
		if answers[1].Action == guest.Accept {
			_ = json.Unmarshal(answers[1].Content, &confirm)
		}
		return guest.Textf("name=%q confirmed=%t", name.Name, confirm.Confirm), nil
	},
}

var toolWithTask = guest.Tool{
	Name:        "test_tool_with_task",
	Description: "Asks for a name first, then becomes a task that greets it.",
	InputSchema: `{"type":"object"}`,
	TaskSupport: abi.TaskRequired,
	TaskStart:   abi.TaskStartBegin,
	Handler: func(c *guest.Call, _ json.RawMessage) (guest.Result, error) {
		var in struct {
			Name string `json:"name"`
		}
		action, err := c.Elicit("What is your name?", `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`, &in)
		if err != nil {
			return guest.Result{}, err
		}
		if action != guest.Accept {
			return guest.Result{}, fmt.Errorf("no name given (%s)", action)
		}
		c.BeginTask() // from here on, the work runs as a task
		sleep(200 * time.Millisecond)
		return guest.Textf("Hello, %s! (computed in task)", in.Name), nil
	},
}
