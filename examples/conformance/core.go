package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/abi/guest"
)

// The fixture tools of the suite's core (non-task) scenarios.

var coreTools = []guest.Tool{
	{
		Name:        "test_sampling",
		Description: "Asks the client's model to answer a prompt (sampling).",
		InputSchema: `{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}`,
		Handler: guest.Handle(func(c *guest.Call, in struct {
			Prompt string `json:"prompt"`
		}) (guest.Result, error) {
			text, err := c.SampleText(in.Prompt, 100)
			if err != nil {
				return guest.Result{}, fmt.Errorf("sampling failed: %w", err)
			}
			return guest.Textf("LLM response: %s", text), nil
		}),
	},
	{
		Name:        "test_simple_text",
		Description: "Returns a fixed text.",
		Handler: func(*guest.Call, json.RawMessage) (guest.Result, error) {
			return guest.Text("This is a simple text response for testing."), nil
		},
	},
	{
		Name:        "test_image_content",
		Description: "Returns a 1x1 PNG image.",
		Handler: func(*guest.Call, json.RawMessage) (guest.Result, error) {
			return guest.Result{Content: []abi.Content{pixelImage()}}, nil
		},
	},
	{
		Name:        "test_audio_content",
		Description: "Returns a short silent WAV sound.",
		Handler: func(*guest.Call, json.RawMessage) (guest.Result, error) {
			return guest.Result{Content: []abi.Content{{Type: "audio", Data: base64.StdEncoding.EncodeToString(silentWAV(800)), MIMEType: "audio/wav"}}}, nil
		},
	},
	{
		Name:        "test_embedded_resource",
		Description: "Returns a text resource's contents, embedded.",
		Handler: func(*guest.Call, json.RawMessage) (guest.Result, error) {
			return guest.Result{Content: []abi.Content{{Type: "resource", Resource: &abi.ResourceContents{
				URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
			}}}}, nil
		},
	},
	{
		Name:        "test_multiple_content_types",
		Description: "Returns a text, an image and an embedded JSON resource in one result.",
		Handler: func(*guest.Call, json.RawMessage) (guest.Result, error) {
			return guest.Result{Content: []abi.Content{
				{Type: "text", Text: "Multiple content types test:"},
				pixelImage(),
				{Type: "resource", Resource: &abi.ResourceContents{
					URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`,
				}},
			}}, nil
		},
	},
	{
		Name:        "test_tool_with_logging",
		Description: "Logs three messages while it runs.",
		Handler: func(c *guest.Call, _ json.RawMessage) (guest.Result, error) {
			for i := 1; i <= 3; i++ {
				c.Logf(guest.LevelInfo, "log message %d of 3", i)
				sleep(50 * time.Millisecond)
			}
			return guest.Text("logged three messages"), nil
		},
	},
	{
		Name:        "test_error_handling",
		Description: "Always fails with a tool error.",
		Handler: func(*guest.Call, json.RawMessage) (guest.Result, error) {
			// A tool error as a result: the text is the suite's, capitalised.
			return guest.Result{Content: []abi.Content{{Type: "text", Text: "This tool intentionally returns an error for testing"}}, IsError: true}, nil
		},
	},
	{
		Name:        "test_tool_with_progress",
		Description: "Reports progress 0, 50 and 100 of 100.",
		Handler: func(c *guest.Call, _ json.RawMessage) (guest.Result, error) {
			for _, p := range []float64{0, 50, 100} {
				c.Progress(p, 100, fmt.Sprintf("%g%%", p))
				sleep(50 * time.Millisecond)
			}
			return guest.Text("progress reported"), nil
		},
	},
	{
		Name:        "test_elicitation",
		Description: "Asks the user for a username and an email address.",
		InputSchema: `{"type":"object","properties":{"message":{"type":"string"}}}`,
		Handler: guest.Handle(func(c *guest.Call, in struct {
			Message string `json:"message"`
		}) (guest.Result, error) {
			if in.Message == "" {
				in.Message = "Please provide your information"
			}
			var answer json.RawMessage
			action, err := c.Elicit(in.Message, `{"type":"object","properties":{"username":{"type":"string","description":"your username"},`+
				`"email":{"type":"string","format":"email","description":"your email address"}},"required":["username","email"]}`, &answer)
			if err != nil {
				return guest.Result{}, err
			}
			return guest.Textf("User response: action=%s content=%s", action, answer), nil
		}),
	},
	{
		Name:        "test_elicitation_sep1034_defaults",
		Description: "Asks for a form whose fields have default values.",
		Handler: func(c *guest.Call, _ json.RawMessage) (guest.Result, error) {
			var answer json.RawMessage
			action, err := c.Elicit("Please review and update the form fields with defaults", `{"type":"object","properties":{`+
				`"name":{"type":"string","description":"User name","default":"John Doe"},`+
				`"age":{"type":"integer","description":"User age","default":30},`+
				`"score":{"type":"number","description":"User score","default":95.5},`+
				`"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},`+
				`"verified":{"type":"boolean","description":"Verification status","default":true}}}`, &answer)
			if err != nil {
				return guest.Result{}, err
			}
			return guest.Textf("Elicitation completed: action=%s, content=%s", action, answer), nil
		},
	},
	{
		Name:        "test_elicitation_sep1330_enums",
		Description: "Asks for a form with the five kinds of choice fields.",
		Handler: func(c *guest.Call, _ json.RawMessage) (guest.Result, error) {
			var answer json.RawMessage
			action, err := c.Elicit("Please select options from the enum fields", `{"type":"object","properties":{`+
				`"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},`+
				`"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},`+
				`"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},`+
				`"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},`+
				`"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`, &answer)
			if err != nil {
				return guest.Result{}, err
			}
			return guest.Textf("Elicitation completed: action=%s, content=%s", action, answer), nil
		},
	},
	{
		Name:        "json_schema_2020_12_tool",
		Description: "Declares an input schema that uses JSON Schema 2020-12 keywords.",
		InputSchema: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
			`"$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},` +
			`"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},` +
			`"phone":{"type":"string"},"email":{"type":"string"}},` +
			`"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],` +
			`"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},` +
			`"additionalProperties":false}`,
		Handler: func(*guest.Call, json.RawMessage) (guest.Result, error) {
			return guest.Text("ok"), nil
		},
	},
}

// pixelPNG is a 1x1 PNG image of one red pixel.
func pixelPNG() []byte {
	var buf bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	if err := png.Encode(&buf, img); err != nil {
		panic(err) // encoding an in-memory image into a buffer does not fail
	}
	return buf.Bytes()
}

// pixelImage is pixelPNG as an image content block.
func pixelImage() abi.Content {
	return abi.Content{Type: "image", Data: base64.StdEncoding.EncodeToString(pixelPNG()), MIMEType: "image/png"}
}

// silentWAV is a mono 8 kHz 16-bit PCM WAV file of n silent samples.
func silentWAV(n int) []byte {
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + 2*n))
	b.WriteString("WAVEfmt ")
	w(uint32(16))
	w(uint16(1))     // PCM
	w(uint16(1))     // mono
	w(uint32(8000))  // sample rate
	w(uint32(16000)) // byte rate
	w(uint16(2))     // block align
	w(uint16(16))    // bits per sample
	b.WriteString("data")
	w(uint32(2 * n))
	b.Write(make([]byte, 2*n))
	return b.Bytes()
}
