package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/abi/guest"
)

// The fixtures of the suite's input-required-result scenarios (SEP-2322):
// tools and a prompt whose questions have keys they choose. Under
// 2026-07-28 each question without an answer ends the round with
// input_required; the host seals the answers taken so far into the
// requestState the client echoes, and refuses an altered one.

const (
	nameSchema  = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`
	okSchema    = `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`
	colorSchema = `{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`
)

// ask asks the questions and returns their answers, or the error a
// handler returns when the client cannot answer.
func ask(c *guest.Call, qs ...guest.Question) ([]guest.Answer, error) {
	answers, err := c.ElicitAll(qs...)
	if err != nil {
		return nil, fmt.Errorf("the client could not be asked: %w", err)
	}
	return answers, nil
}

// field is member name of an accepted elicitation's content, as text.
func field(a guest.Answer, name string) string {
	var m map[string]any
	if json.Unmarshal(a.Content, &m) != nil {
		return ""
	}
	return fmt.Sprint(m[name])
}

func sampled(q string, maxTokens int) *guest.SampleRequest {
	return &guest.SampleRequest{MaxTokens: maxTokens, Messages: []guest.SampleMessage{{Role: "user", Content: abi.Content{Type: "text", Text: q}}}}
}

func rootURIs(roots []guest.Root) string {
	uris := make([]string, len(roots))
	for i, r := range roots {
		uris[i] = r.URI
	}
	return strings.Join(uris, ", ")
}

// roundTool is a fixture tool without arguments.
func roundTool(name, description string, run func(c *guest.Call) (guest.Result, error)) guest.Tool {
	return guest.Tool{Name: name, Description: description,
		Handler: func(c *guest.Call, _ json.RawMessage) (guest.Result, error) { return run(c) }}
}

// greetByName asks for a name (input key user_name) and greets.
func greetByName(c *guest.Call) (guest.Result, error) {
	a, err := ask(c, guest.Question{Key: "user_name", Message: "What is your name?", Schema: nameSchema})
	if err != nil {
		return guest.Result{}, err
	}
	return guest.Textf("Hello, %s!", field(a[0], "name")), nil
}

// confirm asks for a confirmation (input key confirm) and answers format
// with its value.
func confirm(format string) func(*guest.Call) (guest.Result, error) {
	return func(c *guest.Call) (guest.Result, error) {
		a, err := ask(c, guest.Question{Key: "confirm", Message: "Please confirm", Schema: okSchema})
		if err != nil {
			return guest.Result{}, err
		}
		return guest.Textf(format, field(a[0], "ok")), nil
	}
}

var roundTools = []guest.Tool{
	roundTool("test_input_required_result_elicitation", "Asks for a name (input key user_name) and greets.", greetByName),
	roundTool("test_input_required_result_sampling", "Asks the client's model a question (input key capital_question).", func(c *guest.Call) (guest.Result, error) {
		a, err := ask(c, guest.Question{Key: "capital_question", Sample: sampled("What is the capital of France?", 100)})
		if err != nil || a[0].Sample == nil {
			return guest.Result{}, fmt.Errorf("no answer from the model: %v", err)
		}
		return guest.Textf("The model says: %s", a[0].Sample.Content.Text), nil
	}),
	roundTool("test_input_required_result_list_roots", "Asks for the client's roots (input key client_roots).", func(c *guest.Call) (guest.Result, error) {
		a, err := ask(c, guest.Question{Key: "client_roots", Roots: true})
		if err != nil {
			return guest.Result{}, err
		}
		return guest.Textf("Roots: %s", rootURIs(a[0].Roots)), nil
	}),
	// The host verified the echoed requestState before this run (it
	// refuses the request otherwise): "state-ok" says the round went through.
	roundTool("test_input_required_result_request_state", "Asks for a confirmation; completes once the round's state checks out.", confirm("state-ok: confirmed=%s")),
	roundTool("test_input_required_result_multiple_inputs", "Asks for a name, a greeting from the model and the roots at once.", func(c *guest.Call) (guest.Result, error) {
		a, err := ask(c,
			guest.Question{Key: "user_name", Message: "What is your name?", Schema: nameSchema},
			guest.Question{Key: "greeting", Sample: sampled("Generate a greeting", 50)},
			guest.Question{Key: "client_roots", Roots: true})
		if err != nil {
			return guest.Result{}, err
		}
		greeting := ""
		if a[1].Sample != nil {
			greeting = a[1].Sample.Content.Text
		}
		return guest.Textf("%s, %s! Roots: %s", greeting, field(a[0], "name"), rootURIs(a[2].Roots)), nil
	}),
	roundTool("test_input_required_result_multi_round", "Asks for a name, then for a colour, in two rounds.", func(c *guest.Call) (guest.Result, error) {
		name, err := ask(c, guest.Question{Key: "step1", Message: "Step 1: What is your name?", Schema: nameSchema})
		if err != nil {
			return guest.Result{}, err
		}
		color, err := ask(c, guest.Question{Key: "step2", Message: "Step 2: What is your favorite color?", Schema: colorSchema})
		if err != nil {
			return guest.Result{}, err
		}
		return guest.Textf("%s likes %s", field(name[0], "name"), field(color[0], "color")), nil
	}),
	roundTool("test_input_required_result_tampered_state", "Asks for a confirmation; an altered requestState is refused by the host.", confirm("confirmed=%s")),
	// The host asks only what the request's client capabilities declare:
	// a question the client cannot take is answered cancel at once.
	roundTool("test_input_required_result_capabilities", "Asks for a name and for a message from the model; the client is asked only what it declares.", func(c *guest.Call) (guest.Result, error) {
		a, err := ask(c,
			guest.Question{Key: "user_name", Message: "What is your name?", Schema: nameSchema},
			guest.Question{Key: "capital_question", Sample: sampled("What is the capital of France?", 100)})
		if err != nil {
			return guest.Result{}, err
		}
		return guest.Textf("elicitation: %s; sampling answered: %t", a[0].Action, a[1].Sample != nil), nil
	}),
}

// The server-stateless scenario's diagnostic tools (SEP-2575), and a tool
// with a header parameter for the SEP-2243 scenarios.
var statelessTools = []guest.Tool{
	{
		Name:        "test_missing_capability",
		Description: "Needs the client's sampling capability: a client that does not declare it is refused (-32021).",
		Requires:    []string{"sampling"},
		Handler: func(c *guest.Call, _ json.RawMessage) (guest.Result, error) {
			text, err := c.SampleText("Say hello", 20)
			if err != nil {
				return guest.Result{}, err
			}
			return guest.Text(text), nil
		},
	},
	{
		Name:        "test_streaming_elicitation",
		Description: "Asks for a name: under 2026-07-28 the question comes back as input_required, never as a request of the server's.",
		Requires:    []string{"elicitation"},
		Handler:     func(c *guest.Call, _ json.RawMessage) (guest.Result, error) { return greetByName(c) },
	},
	// SEP-2243: the region argument travels in the Mcp-Param-Region
	// header too, which the host holds to the body (-32020 otherwise).
	{
		Name:        "check_region",
		Description: "Says which region a request is routed to (its region argument is mirrored into a header).",
		InputSchema: `{"type":"object","properties":{"region":{"type":"string","description":"the region to run in","x-mcp-header":"Region"}}}`,
		Handler: guest.Handle(func(_ *guest.Call, in struct {
			Region string `json:"region"`
		}) (guest.Result, error) {
			return guest.Textf("region: %q", in.Region), nil
		}),
	},
	{
		Name:        "test_logging_tool",
		Description: "Logs at each level, then answers.",
		Handler: func(c *guest.Call, _ json.RawMessage) (guest.Result, error) {
			for _, l := range []guest.Level{guest.LevelDebug, guest.LevelInfo, guest.LevelWarning, guest.LevelError} {
				c.Log(l, "a log message")
			}
			return guest.Text("logged"), nil
		},
	},
	// The suite changes the tool and prompt lists through these two and
	// waits for list_changed on an open subscriptions/listen stream.
	{
		Name:        "test_trigger_tool_change",
		Description: "Adds a spare tool module to the served directory, or removes it again: the tool list changes.",
		Handler:     func(*guest.Call, json.RawMessage) (guest.Result, error) { return toggleSpare("add.wasm") },
	},
	{
		Name:        "test_trigger_prompt_change",
		Description: "Adds a spare prompt module to the served directory, or removes it again: the prompt list changes.",
		Handler:     func(*guest.Call, json.RawMessage) (guest.Result, error) { return toggleSpare("spare_prompt.wasm") },
	},
}

// fixtureDir is where run.sh mounts, writable, the fixture directory it
// serves: tools/ (the directory wasmtask watches) and spare/ (modules
// that are not served until a trigger moves them into tools/).
const fixtureDir = "/fixture"

// toggleSpare moves file from spare/ into tools/, or back when it is
// there already. A rename is one event in the watched directory, so the
// host reloads once and notifies the list that changed.
func toggleSpare(file string) (guest.Result, error) {
	served, spare := path.Join(fixtureDir, "tools", file), path.Join(fixtureDir, "spare", file)
	from, to, done := spare, served, "added"
	if _, err := os.Stat(served); err == nil {
		from, to, done = served, spare, "removed"
	}
	if err := os.Rename(from, to); err != nil {
		return guest.Result{}, fmt.Errorf("cannot move %s (this tool needs the writable %s mount run.sh grants): %w", file, fixtureDir, err)
	}
	return guest.Textf("%s %s: the list changes once the directory has reloaded", done, file), nil
}

var roundPrompt = guest.Prompt{
	Name:        "test_input_required_result_prompt",
	Description: "A prompt that asks the user for its context first.",
	Get: func(c *guest.Call, _ map[string]string) (abi.PromptResult, error) {
		a, err := ask(c, guest.Question{Key: "user_context", Message: "What context should the prompt use?",
			Schema: `{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}`})
		if err != nil {
			return abi.PromptResult{}, err
		}
		return abi.PromptResult{Description: "A prompt with the user's context",
			Messages: []abi.PromptMessage{{Role: "user", Content: abi.Content{Type: "text", Text: "Use this context: " + field(a[0], "context")}}}}, nil
	},
}
