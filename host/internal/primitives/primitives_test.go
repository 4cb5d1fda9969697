package primitives

import (
	"maps"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
)

func manifest(t *testing.T, doc string) *abi.Manifest {
	t.Helper()
	m, err := abi.DecodeManifest([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTable(t *testing.T) {
	a := manifest(t, `{"abi":1,"resources":[{"uri":"a://one","name":"one"},{"uri":"x://shared","name":"s"}],
		"resourceTemplates":[{"uriTemplate":"a://items/{id}","name":"item","complete":["id"]}],
		"prompts":[{"name":"greet","arguments":[{"name":"who","complete":true},{"name":"tone"}]}]}`)
	b := manifest(t, `{"abi":1,"resources":[{"uri":"x://shared","name":"s2"},{"uri":"b://two","name":"two"}],
		"resourceTemplates":[{"uriTemplate":"a://items/{id}","name":"dup"},{"uriTemplate":"a://{+any}","name":"all"}],
		"prompts":[{"name":"greet"},{"name":"bye"}]}`)
	tab := Build([]Source[string]{{"a", a, "A"}, {"b", b, "B"}})

	if got := len(tab.Resources(nil)); got != 3 {
		t.Errorf("%d resources, want 3 (the shared URI once)", got)
	}
	if r := tab.Resources(nil); r[0].URI != "a://one" || r[2].URI != "x://shared" || r[2].Name != "s" {
		t.Errorf("resources %+v: want by URI, the shared one a's", r)
	}
	if got := len(tab.Conflicts()); got != 3 {
		t.Errorf("conflicts %v, want the shared resource, the duplicate template and prompt", tab.Conflicts())
	}
	for _, tc := range []struct {
		uri, module, template string
		vars                  map[string]string
	}{
		{"a://one", "a", "", nil},
		{"x://shared", "a", "", nil},
		{"a://items/7", "a", "a://items/{id}", map[string]string{"id": "7"}},
		{"a://other/path", "b", "a://{+any}", map[string]string{"any": "other/path"}},
	} {
		r, ok := tab.Route(tc.uri)
		if !ok || r.Module != tc.module || r.Template != tc.template || !maps.Equal(r.Variables, tc.vars) {
			t.Errorf("Route(%q) = %+v, %v; want module %s, template %q, %v", tc.uri, r, ok, tc.module, tc.template, tc.vars)
		}
	}
	if _, ok := tab.Route("z://none"); ok {
		t.Error("routed a URI nothing serves")
	}
	if m, code, _, ok := tab.Prompt("greet"); !ok || m != "a" || code != "A" {
		t.Errorf("Prompt(greet) = %s %s %v, want a's", m, code, ok)
	}
	if m, _, ok := tab.Completer(abi.CompleteRef{Type: abi.RefPrompt, Name: "greet"}, "who"); !ok || m != "a" {
		t.Errorf("completer of greet.who = %s, %v", m, ok)
	}
	if _, _, ok := tab.Completer(abi.CompleteRef{Type: abi.RefPrompt, Name: "greet"}, "tone"); ok {
		t.Error("a completer for an argument that declares none")
	}
	if m, _, ok := tab.Completer(abi.CompleteRef{Type: abi.RefResource, URI: "a://items/{id}"}, "id"); !ok || m != "a" {
		t.Errorf("completer of the template's id = %s, %v", m, ok)
	}
}
