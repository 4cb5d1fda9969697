package tenancy

import "testing"

// What a tenant's patterns let it see, kind by kind.
func TestVisible(t *testing.T) {
	f, err := Parse([]byte(`{"tenants": {
		"all":   {"tokens": ["`+HashToken("a")+`"]},
		"tools": {"tokens": ["`+HashToken("b")+`"], "tools": ["search"]},
		"docs":  {"tokens": ["`+HashToken("c")+`"], "resources": ["docs://*"], "prompts": ["review*"]},
		"mod":   {"tokens": ["`+HashToken("d")+`"], "modules": ["kb"]}
	}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAuth(f)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	for _, tc := range []struct {
		tenant, kind, name, module string
		want                       bool
	}{
		{"all", Tool, "anything", "any", true},
		{"all", Resource, "x://y", "any", true},
		{"tools", Tool, "search", "any", true},
		{"tools", Tool, "other", "any", false},
		{"tools", Resource, "docs://a", "any", false}, // restricted: only what is named
		{"tools", Prompt, "review", "any", false},
		{"docs", Resource, "docs://a", "any", true},
		{"docs", Resource, "docs://{page}", "any", true}, // a template by its URI template
		{"docs", Resource, "docs://a/b", "any", false},   // path.Match: * stops at /
		{"docs", Prompt, "review-go", "any", true},
		{"docs", Tool, "search", "any", false},
		{"mod", Tool, "t", "kb", true},
		{"mod", Resource, "x://y", "kb", true},
		{"mod", Prompt, "p", "kb", true},
		{"mod", Prompt, "p", "other", false},
		{"nobody", Tool, "search", "kb", false},
	} {
		if got := a.Visible(tc.tenant, tc.kind, tc.name, tc.module); got != tc.want {
			t.Errorf("Visible(%s, %s, %s, %s) = %v, want %v", tc.tenant, tc.kind, tc.name, tc.module, got, tc.want)
		}
	}
}
