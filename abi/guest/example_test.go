package guest_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/wasmtask/wasmtask/abi/guest"
)

type greetArgs struct {
	Name string `json:"name"`
}

var greet = guest.Tool{
	Name:        "greet",
	Description: "Greets someone.",
	InputSchema: `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`,
	Handler: guest.Handle(func(c *guest.Call, in greetArgs) (guest.Result, error) {
		if in.Name == "" {
			return guest.Result{}, fmt.Errorf("name is empty")
		}
		return guest.Text("Hello, " + in.Name + "!"), nil
	}),
}

// A tool's main is guest.Run(tools...); Serve lets a test drive the same
// code with any request.
func ExampleServe() {
	req := `{"abi":1,"method":"call","tool":"greet","arguments":{"name":"Ada"}}`
	if err := guest.Serve(strings.NewReader(req), os.Stdout, greet); err != nil {
		fmt.Println(err)
	}
	fmt.Println()
	req = `{"abi":1,"method":"call","tool":"greet","arguments":{"name":""}}`
	if err := guest.Serve(strings.NewReader(req), os.Stdout, greet); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"content":[{"type":"text","text":"Hello, Ada!"}]}
	// {"content":[{"type":"text","text":"name is empty"}],"isError":true}
}

func ExampleDescribe() {
	b, err := guest.Describe(greet)
	fmt.Println(string(b), err)
	// Output:
	// {"abi":1,"revision":2,"tools":[{"name":"greet","description":"Greets someone.","inputSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}]} <nil>
}

// In a pre-initialised build (tag wasmtask_preinit), a tool names the
// types its handlers encode themselves, so that encoding/json is ready for
// them once, at load, instead of in every call.
func ExampleWarm() {
	type stats struct {
		Words int `json:"words"`
	}
	guest.Warm(stats{}) // in an init function of the tool
	res, err := guest.Structured(stats{Words: 3})
	fmt.Println(string(res.StructuredContent), err)
	// Output:
	// {"words":3} <nil>
}
