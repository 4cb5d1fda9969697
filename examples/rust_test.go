package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
)

// The Rust example (examples/rust: the wasmtask bindings crate and the
// wordfreq tool module), built from source with ABI.md's cargo command and
// called through the host.

func TestRustThroughHost(t *testing.T) {
	s := serveExample(t, exampleFor(t, "rust"))
	if got, want := fmt.Sprint(s.toolSupport()), "map[greet:optional top_words:forbidden]"; got != want {
		t.Errorf("tools/list: got %v, want %s", got, want)
	}

	tests := []struct {
		name           string
		args           map[string]any
		wantText       string
		wantStructured string
	}{
		{"counts and ranks", map[string]any{"text": "the cat and the hat and THE bat", "n": 2},
			"the 3\nand 2",
			`{"distinct":5,"words":[{"count":3,"word":"the"},{"count":2,"word":"and"}]}`},
		// Escapes, accents and emoji reach the tool as the client sent
		// them; the emoji and punctuation separate words; equal counts
		// are ranked by their UTF-8 bytes, so x before été.
		{"unicode and escapes", map[string]any{"text": "\u00c9t\u00e9 \"\u00e9t\u00e9\"\n\U0001F600x\tX-x\\\u00e9T\u00c9", "n": 5},
			"x 3\nété 3",
			`{"distinct":2,"words":[{"count":3,"word":"x"},{"count":3,"word":"été"}]}`},
		{"n defaults to 10", map[string]any{"text": "k j i h g f e d c b a a"},
			"a 2\nb 1\nc 1\nd 1\ne 1\nf 1\ng 1\nh 1\ni 1\nj 1",
			`{"distinct":11,"words":[{"count":2,"word":"a"},{"count":1,"word":"b"},{"count":1,"word":"c"},{"count":1,"word":"d"},{"count":1,"word":"e"},{"count":1,"word":"f"},{"count":1,"word":"g"},{"count":1,"word":"h"},{"count":1,"word":"i"},{"count":1,"word":"j"}]}`},
		{"no words", map[string]any{"text": " ,;! "}, "", `{"distinct":0,"words":[]}`},
	}
	for i, tt := range tests {
		token := fmt.Sprintf("words-%d", i)
		r := s.callTool("top_words", tt.args, token)
		if r.IsError || r.Text() != tt.wantText {
			t.Errorf("%s: got %q (isError %v), want %q", tt.name, r.Text(), r.IsError, tt.wantText)
		}
		if got := canonical(t, r.StructuredContent); got != tt.wantStructured {
			t.Errorf("%s: structuredContent %s, want %s", tt.name, got, tt.wantStructured)
		}
		if len(s.progress(token)) == 0 {
			t.Errorf("%s: no progress notification", tt.name)
		}
	}
	wantArgumentsError(t, "top_words with n 0", "top_words", s.callTool("top_words", map[string]any{"text": "a", "n": 0}, ""))

	if r := s.callTool("greet", map[string]any{"name": "Ada \u00e9\U0001F600"}, ""); r.IsError || r.Text() != "Hello, Ada \u00e9\U0001F600!" {
		t.Errorf("greet Ada: got %+v, want Hello, Ada é😀!", r)
	}
}

// TestRustPrimitivesThroughHost reads wordfreq's resource and gets its
// prompt over MCP: the bindings' Module dispatches read and prompt
// requests to their handlers and writes their answers and errors.
func TestRustPrimitivesThroughHost(t *testing.T) {
	s := serveExample(t, exampleFor(t, "rust"))
	if got := s.resources(); asJSON(got) != `["wordfreq://about"]` {
		t.Errorf("resources/list: got %v, want wordfreq://about", got)
	}
	if got := s.prompts(); asJSON(got) != `["themes"]` {
		t.Errorf("prompts/list: got %v, want themes", got)
	}
	about := s.readResource("wordfreq://about")
	if len(about) != 1 || about[0].URI != "wordfreq://about" || about[0].MIMEType != "text/markdown" ||
		!strings.HasPrefix(about[0].Text, "# wordfreq\n\nA word is a run of letters and digits, lowercased.") {
		t.Errorf("resources/read wordfreq://about: got %s", asJSON(about))
	}

	for _, tt := range []struct {
		name     string
		args     map[string]string
		wantDesc string
		wantText string
	}{
		{"ranked as top_words ranks", map[string]string{"text": "the cat and the hat and THE bat", "n": "2"},
			"Themes of the 2 most frequent words",
			"The most frequent words of a text are: the (3), and (2). Which themes do they suggest?"},
		{"escapes and n by default", map[string]string{"text": "\"\u00e9t\u00e9\" \u00c9T\u00c9\n\U0001F600 <b>"},
			"Themes of the 2 most frequent words",
			"The most frequent words of a text are: été (2), b (1). Which themes do they suggest?"},
	} {
		p := s.getPrompt("themes", tt.args)
		if p.Description != tt.wantDesc || len(p.Messages) != 1 || p.Messages[0].Role != "user" || p.Messages[0].Content.Text != tt.wantText {
			t.Errorf("prompts/get themes, %s: got %s, want %q: %q", tt.name, asJSON(p), tt.wantDesc, tt.wantText)
		}
	}
	for _, args := range []map[string]string{{"text": " ,;! "}, {"text": "a", "n": "0"}, {"n": "3"}} {
		if m := s.call("prompts/get", map[string]any{"name": "themes", "arguments": args}); m.Code() != -32602 {
			t.Errorf("prompts/get themes %v: got %s, want error -32602", args, m.Raw)
		}
	}
}

func TestRustCall(t *testing.T) {
	srv := serveBuilt(t, exampleFor(t, "rust"))

	t.Run("top_words reports every 256 KiB", func(t *testing.T) {
		text := strings.Repeat("alpha beta beta ", 60000) // 960000 bytes
		args, _ := json.Marshal(map[string]any{"text": text, "n": 1})
		var rec recorder
		res, err := srv.Call(context.Background(), "top_words", args, &rec)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(res.StructuredContent); got != `{"words":[{"word":"beta","count":120000}],"distinct":2}` {
			t.Errorf("result: got %s", got)
		}
		rec.check(t, "progress", &rec.progress,
			"262144/960000 read 262144 of 960000 bytes",
			"524288/960000 read 524288 of 960000 bytes",
			"786432/960000 read 786432 of 960000 bytes",
			"960000/960000 read 960000 of 960000 bytes")
		rec.check(t, "log", &rec.logs, fmt.Sprintf("%d 2 distinct words", abi.LogInfo))
	})

	// greet without a name asks for one through the bindings' elicit and
	// reply; each answer and the host's -1 give their own result.
	const wantSchema = `{"type":"object","properties":{"name":{"type":"string","title":"Your name","minLength":1}},"required":["name"]}`
	for _, tt := range []struct {
		name      string
		reply     *abi.ElicitReply
		wantText  string
		wantError bool
	}{
		{"accepted", &abi.ElicitReply{Action: "accept", Content: json.RawMessage(`{"name":"Grace \"G\" H\u00f6pper"}`)}, `Hello, Grace "G" Höpper!`, false},
		{"declined", &abi.ElicitReply{Action: "decline"}, "no name: the user did not answer", true},
		{"cancelled", &abi.ElicitReply{Action: "cancel"}, "no name: the user did not answer", true},
		{"unsupported", nil, "no name given, and nobody can answer the question", true},
	} {
		t.Run("greet "+tt.name, func(t *testing.T) {
			rec := recorder{reply: tt.reply}
			res, err := srv.Call(context.Background(), "greet", json.RawMessage(`{}`), &rec)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Content) != 1 || res.Content[0].Text != tt.wantText || res.IsError != tt.wantError {
				t.Errorf("got %+v, want %q (isError %v)", res, tt.wantText, tt.wantError)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.asked) != 1 {
				t.Fatalf("got %d elicitations, want 1", len(rec.asked))
			}
			if rec.asked[0].Message != "What is your name?" || string(rec.asked[0].RequestedSchema) != wantSchema {
				t.Errorf("asked %q with %s, want \"What is your name?\" with %s", rec.asked[0].Message, rec.asked[0].RequestedSchema, wantSchema)
			}
		})
	}
}
