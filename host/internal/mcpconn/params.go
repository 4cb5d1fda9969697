package mcpconn

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/host/internal/rpcmsg"
)

// A request answered before go-sdk (Options.Answer) must be one go-sdk
// would read the same way: params whose member names are exactly the
// method's (go-sdk's decoder is case-sensitive), none repeated, and no
// _meta key but the ones this layer lifted. These readers take exactly
// those and leave the rest (nil) to go-sdk.

// CallParams reads the params of a tools/call: name, optionally
// arguments, and a _meta holding only the lifted keys (mcpwire.LiftedTaskKey,
// mcpwire.RequestIDKey; a client's _meta may name another protocol
// version or carry a progress token: go-sdk reads those). nil: go-sdk's.
func CallParams(raw json.RawMessage) *mcp.CallToolParamsRaw {
	params, err := exactMembers(raw, "name", "arguments", "_meta")
	if err != nil || params["name"] == nil {
		return nil
	}
	p := new(mcp.CallToolParamsRaw)
	if json.Unmarshal(params["name"], &p.Name) != nil {
		return nil
	}
	p.Arguments = params["arguments"]
	if m := params["_meta"]; m != nil {
		meta, err := exactMembers(m, mcpwire.LiftedTaskKey, mcpwire.RequestIDKey)
		if err != nil {
			return nil
		}
		p.Meta = make(mcp.Meta, len(meta))
		for k, v := range meta {
			var val any
			if json.Unmarshal(v, &val) != nil {
				return nil
			}
			p.Meta[k] = val
		}
	}
	return p
}

// ReadParams reads the params of resources/read: exactly a uri string.
// nil: go-sdk's.
func ReadParams(raw json.RawMessage) *mcp.ReadResourceParams {
	params, err := exactMembers(raw, "uri")
	if err != nil || params["uri"] == nil {
		return nil
	}
	var p mcp.ReadResourceParams
	if json.Unmarshal(params["uri"], &p.URI) != nil || p.URI == "" {
		return nil
	}
	return &p
}

// PromptParams reads the params of prompts/get: a name string and
// optionally arguments, an object of strings. nil: go-sdk's.
func PromptParams(raw json.RawMessage) *mcp.GetPromptParams {
	params, err := exactMembers(raw, "name", "arguments")
	if err != nil || params["name"] == nil {
		return nil
	}
	var p mcp.GetPromptParams
	if json.Unmarshal(params["name"], &p.Name) != nil || p.Name == "" {
		return nil
	}
	if a := params["arguments"]; a != nil && json.Unmarshal(a, &p.Arguments) != nil {
		return nil
	}
	return &p
}

// TaskParams reads the params of tasks/get, tasks/cancel or tasks/result:
// exactly a taskId string. nil: go-sdk's.
func TaskParams(raw json.RawMessage) *mcpwire.TaskIDParams {
	params, err := exactMembers(raw, "taskId")
	if err != nil || params["taskId"] == nil {
		return nil
	}
	var p mcpwire.TaskIDParams
	if json.Unmarshal(params["taskId"], &p.TaskID) != nil || p.TaskID == "" {
		return nil
	}
	return &p
}

// exactMembers returns the members of the JSON object raw when each is
// one of names, spelled exactly and not repeated.
func exactMembers(raw json.RawMessage, names ...string) (map[string]json.RawMessage, error) {
	return rpcmsg.Members(raw, func(name string) error {
		if !slices.Contains(names, name) {
			return fmt.Errorf("member %q", name)
		}
		return nil
	})
}
