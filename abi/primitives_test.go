package abi

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestManifestPrimitives(t *testing.T) {
	ok := `{"abi":1,"revision":2,"resources":[{"uri":"file:///readme","name":"readme","mimeType":"text/plain","size":12,"annotations":{"audience":["user"],"priority":0.5}}],
		"resourceTemplates":[{"uriTemplate":"test://items/{id}{?lang}","name":"item","complete":["id"]}],
		"prompts":[{"name":"greet","arguments":[{"name":"who","required":true,"complete":true}]}]}`
	m, err := DecodeManifest([]byte(ok))
	if err != nil {
		t.Fatalf("a manifest with no tools but other primitives: %v", err)
	}
	if !m.Serves() || len(m.Resources) != 1 || m.Prompts[0].Arguments[0].Name != "who" {
		t.Errorf("decoded %+v", m)
	}
	for _, tc := range []struct{ name, manifest, want string }{
		{"nothing at all", `{"abi":1,"tools":[]}`, "declares no tools"},
		{"resource without a scheme", `{"abi":1,"resources":[{"uri":"readme","name":"r"}]}`, "does not start with a scheme"},
		{"resource URI with a space", `{"abi":1,"resources":[{"uri":"file:///a b","name":"r"}]}`, "not printable ASCII"},
		{"resource URI too long", `{"abi":1,"resources":[{"uri":"file:///` + strings.Repeat("a", MaxURIBytes) + `","name":"r"}]}`, "more than"},
		{"duplicate resource", `{"abi":1,"resources":[{"uri":"a:1","name":"r"},{"uri":"a:1","name":"s"}]}`, "duplicate resource uri"},
		{"resource without a name", `{"abi":1,"resources":[{"uri":"a:1"}]}`, "name is empty"},
		{"bad mime type", `{"abi":1,"resources":[{"uri":"a:1","name":"r","mimeType":"text"}]}`, "not a media type"},
		{"bad audience", `{"abi":1,"resources":[{"uri":"a:1","name":"r","annotations":{"audience":["everyone"]}}]}`, "audience"},
		{"bad priority", `{"abi":1,"resources":[{"uri":"a:1","name":"r","annotations":{"priority":2}}]}`, "priority"},
		{"negative size", `{"abi":1,"resources":[{"uri":"a:1","name":"r","size":-1}]}`, "negative"},
		{"unclosed template", `{"abi":1,"resourceTemplates":[{"uriTemplate":"a://{id","name":"t"}]}`, "no closing brace"},
		{"template without scheme", `{"abi":1,"resourceTemplates":[{"uriTemplate":"{+path}","name":"t"}]}`, "scheme"},
		{"template variable twice", `{"abi":1,"resourceTemplates":[{"uriTemplate":"a://{id}/{id}","name":"t"}]}`, "twice"},
		{"template completes an unknown variable", `{"abi":1,"resourceTemplates":[{"uriTemplate":"a://{id}","name":"t","complete":["x"]}]}`, "not one of its variables"},
		{"too many expressions", `{"abi":1,"resourceTemplates":[{"uriTemplate":"a://` + manyExpressions(MaxTemplateExpressions+1) + `","name":"t"}]}`, "more than"},
		{"bad prompt name", `{"abi":1,"prompts":[{"name":"a b"}]}`, "invalid name"},
		{"duplicate prompt", `{"abi":1,"prompts":[{"name":"p"},{"name":"p"}]}`, "duplicate prompt"},
		{"duplicate argument", `{"abi":1,"prompts":[{"name":"p","arguments":[{"name":"a"},{"name":"a"}]}]}`, "duplicate argument"},
		{"too many arguments", `{"abi":1,"prompts":[{"name":"p","arguments":[` + strings.Repeat(`{"name":"a"},`, MaxPromptArguments) + `{"name":"b"}]}]}`, "arguments, at most"},
	} {
		if _, err := DecodeManifest([]byte(tc.manifest)); !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrManifest saying %q", tc.name, err, tc.want)
		}
	}
}

func TestParseTemplate(t *testing.T) {
	parts, err := ParseTemplate("test://items/{id}{?lang,fmt}")
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 || parts[0].Literal != "test://items/" || parts[1].Op != ' ' || parts[2].Op != '?' || len(parts[2].Vars) != 2 {
		t.Errorf("parts = %+v", parts)
	}
	for _, bad := range []string{"", "a://{}", "a://{id", "a://}", "a://{id:0}", "a://{id:12345}", "a://{.}", "a://{a..b}", "a://x y", "{id}"} {
		if _, err := ParseTemplate(bad); err == nil {
			t.Errorf("ParseTemplate(%q) accepted", bad)
		}
	}
}

func FuzzParseTemplate(f *testing.F) {
	f.Add("a://x/{id}{?q}")
	f.Add("file:///{+path}")
	f.Fuzz(func(t *testing.T, tmpl string) {
		parts, err := ParseTemplate(tmpl)
		if err != nil {
			return
		}
		exprs := 0
		for _, p := range parts {
			if p.Op != 0 {
				exprs++
			}
		}
		if exprs > MaxTemplateExpressions || len(tmpl) > MaxTemplateBytes {
			t.Fatalf("accepted %q beyond the bounds", tmpl)
		}
	})
}

func TestDecodePrimitiveResults(t *testing.T) {
	lim := ResultLimits{}
	if r, err := DecodeReadResult([]byte(`{"contents":[{"uri":"a:1","text":"hi"},{"uri":"a:2","mimeType":"image/png","blob":"aGk="}]}`), "a:1", lim); err != nil || len(r.Contents) != 2 {
		t.Errorf("read: %+v, %v", r, err)
	}
	if r, err := DecodeReadResult([]byte(`{"contents":[],"error":null}`), "a:1", lim); err != nil || r.Error != nil {
		t.Errorf("read of nothing: %+v, %v", r, err)
	}
	if r, err := DecodeReadResult([]byte(`{"error":{"code":-32002,"message":"no such item"}}`), "a:1", lim); err != nil || r.Error.Code != CodeResourceNotFound {
		t.Errorf("read not found: %+v, %v", r, err)
	}
	if r, err := DecodePromptResult([]byte(`{"messages":[{"role":"user","content":{"type":"text","text":"hello"}},{"role":"assistant","content":{"type":"resource","resource":{"uri":"a:1","text":"x"}}}]}`), lim); err != nil || len(r.Messages) != 2 {
		t.Errorf("prompt: %+v, %v", r, err)
	}
	if r, err := DecodeCompleteResult([]byte(`{"values":["a","b"],"total":2}`), lim); err != nil || len(r.Values) != 2 {
		t.Errorf("complete: %+v, %v", r, err)
	}
	if r, err := DecodeResult([]byte(`{"content":[{"type":"resource_link","uri":"a:1","name":"one"},{"type":"resource","resource":{"uri":"a:2","blob":"aGk="}},{"type":"text","text":"t"}]}`), lim); err != nil || len(r.Content) != 3 {
		t.Errorf("mixed tool result: %+v, %v", r, err)
	}
	for _, tc := range []struct {
		name string
		f    func() error
		want string
	}{
		{"read without contents", func() error { _, err := DecodeReadResult([]byte(`{}`), "a:1", lim); return err }, "missing"},
		{"read blob not base64", func() error {
			_, err := DecodeReadResult([]byte(`{"contents":[{"uri":"a:1","blob":"!"}]}`), "a:1", lim)
			return err
		}, "base64"},
		{"read text and blob", func() error {
			_, err := DecodeReadResult([]byte(`{"contents":[{"uri":"a:1","text":"x","blob":"aGk="}]}`), "a:1", lim)
			return err
		}, "both"},
		{"read error and contents", func() error {
			_, err := DecodeReadResult([]byte(`{"contents":[{"uri":"a:1"}],"error":{"code":-32603,"message":"x"}}`), "a:1", lim)
			return err
		}, "alone"},
		{"prompt bad role", func() error {
			_, err := DecodePromptResult([]byte(`{"messages":[{"role":"system","content":{"type":"text","text":"x"}}]}`), lim)
			return err
		}, "role"},
		{"too many completions", func() error {
			_, err := DecodeCompleteResult([]byte(`{"values":[`+strings.Repeat(`"a",`, MaxCompletionValues)+`"b"]}`), lim)
			return err
		}, "at most"},
		{"link without uri", func() error {
			_, err := DecodeResult([]byte(`{"content":[{"type":"resource_link","name":"x"}]}`), lim)
			return err
		}, "uri"},
		{"link with text", func() error {
			_, err := DecodeResult([]byte(`{"content":[{"type":"resource_link","uri":"a:1","name":"x","text":"y"}]}`), lim)
			return err
		}, "no \"text\""},
		{"text block with a uri", func() error {
			_, err := DecodeResult([]byte(`{"content":[{"type":"text","text":"y","uri":"a:1"}]}`), lim)
			return err
		}, "text\" only"},
	} {
		if err := tc.f(); !errors.Is(err, ErrResult) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrResult saying %q", tc.name, err, tc.want)
		}
	}
}

// manyExpressions is n expressions of distinct variables.
func manyExpressions(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{v%d}", i)
	}
	return b.String()
}
