package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/abi/guest"
)

// The fixtures of the suite's resources-*, prompts-* and completion
// scenarios (ABI 1.2): the resources, the template and the prompts each
// scenario reads or renders, with the content it checks.

var resources = []guest.Resource{
	{
		URI:         "test://static-text",
		Name:        "static-text",
		Description: "A fixed text resource.",
		MIMEType:    "text/plain",
		Read: func(r guest.ReadRequest) ([]abi.ResourceContents, error) {
			return guest.TextContents(r.URI, "text/plain", "This is the content of the static text resource."), nil
		},
	},
	{
		URI:         "test://static-binary",
		Name:        "static-binary",
		Description: "A fixed binary resource: a 1x1 PNG image.",
		MIMEType:    "image/png",
		Read: func(r guest.ReadRequest) ([]abi.ResourceContents, error) {
			return []abi.ResourceContents{{URI: r.URI, MIMEType: "image/png", Blob: base64.StdEncoding.EncodeToString(pixelPNG())}}, nil
		},
	},
	{
		// The module never changes it; a client may still subscribe to it
		// (and hears of it when the module is reloaded).
		URI:         "test://watched-resource",
		Name:        "watched-resource",
		Description: "A resource to subscribe to.",
		MIMEType:    "text/plain",
		Read: func(r guest.ReadRequest) ([]abi.ResourceContents, error) {
			return guest.TextContents(r.URI, "text/plain", "This resource is watched by subscribers."), nil
		},
	},
}

var templates = []guest.ResourceTemplate{
	{
		URITemplate: "test://template/{id}/data",
		Name:        "template-data",
		Description: "JSON data for an ID, read from the URI.",
		MIMEType:    "application/json",
		Read: func(r guest.ReadRequest) ([]abi.ResourceContents, error) {
			id := r.Variables["id"]
			if id == "" {
				return nil, fmt.Errorf("%w: %s names no id", guest.ErrNotFound, r.URI)
			}
			data, err := json.Marshal(struct {
				ID           string `json:"id"`
				TemplateTest bool   `json:"templateTest"`
				Data         string `json:"data"`
			}{id, true, "Data for ID: " + id})
			if err != nil {
				return nil, err
			}
			return guest.TextContents(r.URI, "application/json", string(data)), nil
		},
	},
}

// argValues are the values test_prompt_with_arguments's arg1 completes to.
var argValues = []string{"paris", "park", "party", "test", "testValue1", "testing"}

var prompts = []guest.Prompt{
	{
		Name:        "test_simple_prompt",
		Description: "A prompt without arguments.",
		Get: func(*guest.Call, map[string]string) (abi.PromptResult, error) {
			return abi.PromptResult{Messages: []abi.PromptMessage{userText("This is a simple prompt for testing.")}}, nil
		},
	},
	{
		Name:        "test_prompt_with_arguments",
		Description: "A prompt that quotes its two arguments.",
		Arguments: []abi.PromptArgument{
			{Name: "arg1", Description: "First test argument", Required: true, Complete: true},
			{Name: "arg2", Description: "Second test argument", Required: true},
		},
		Get: func(_ *guest.Call, args map[string]string) (abi.PromptResult, error) {
			return abi.PromptResult{Messages: []abi.PromptMessage{
				userText(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", args["arg1"], args["arg2"])),
			}}, nil
		},
		Complete: func(name, value string, _ map[string]string) ([]string, error) {
			var out []string
			if name == "arg1" {
				for _, v := range argValues {
					if strings.HasPrefix(v, value) {
						out = append(out, v)
					}
				}
			}
			return out, nil
		},
	},
	{
		Name:        "test_prompt_with_embedded_resource",
		Description: "A prompt that embeds the resource it is given.",
		Arguments:   []abi.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}},
		Get: func(_ *guest.Call, args map[string]string) (abi.PromptResult, error) {
			uri := args["resourceUri"]
			if abi.CheckURI(uri) != nil {
				return abi.PromptResult{Error: &abi.ProtocolError{Code: -32602, Message: fmt.Sprintf("resourceUri %q is not an absolute URI", uri)}}, nil
			}
			return abi.PromptResult{Messages: []abi.PromptMessage{
				{Role: "user", Content: abi.Content{Type: "resource", Resource: &abi.ResourceContents{
					URI: uri, MIMEType: "text/plain", Text: "Embedded resource content for testing.",
				}}},
				userText("Please process the embedded resource above."),
			}}, nil
		},
	},
	{
		Name:        "test_prompt_with_image",
		Description: "A prompt that shows an image.",
		Get: func(*guest.Call, map[string]string) (abi.PromptResult, error) {
			return abi.PromptResult{Messages: []abi.PromptMessage{
				{Role: "user", Content: pixelImage()},
				userText("Please analyze the image above."),
			}}, nil
		},
	},
}

// userText is a user message of text.
func userText(text string) abi.PromptMessage {
	return abi.PromptMessage{Role: "user", Content: abi.Content{Type: "text", Text: text}}
}
