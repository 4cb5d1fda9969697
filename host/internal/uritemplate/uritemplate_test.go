package uritemplate

import (
	"maps"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
)

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		template, uri string
		want          map[string]string // nil: no match
	}{
		{"test://template/{id}/data", "test://template/42/data", map[string]string{"id": "42"}},
		{"test://template/{id}/data", "test://template/4/2/data", nil},
		{"test://template/{id}/data", "test://template/42/other", nil},
		{"file:///{+path}", "file:///a/b/c.txt", map[string]string{"path": "a/b/c.txt"}},
		{"a://x/{name}", "a://x/hello%20world", map[string]string{"name": "hello world"}},
		{"a://x/{name}", "a://x/bad%2", nil},
		{"a://x/{name}", "a://x/a+b", nil},
		{"a://x{/seg,rest}", "a://x/one/two", map[string]string{"seg": "one", "rest": "two"}},
		{"a://x{/seg,rest}", "a://x/one", map[string]string{"seg": "one"}},
		{"a://x/{id}{?lang,fmt}", "a://x/7?lang=en&fmt=md", map[string]string{"id": "7", "lang": "en", "fmt": "md"}},
		{"a://x/{id}{?lang,fmt}", "a://x/7", map[string]string{"id": "7"}},
		{"a://x/{id}{?lang}", "a://x/7?other=1", nil},
		{"a://x/{id}{?lang}", "a://x/7?lang=1&lang=2", nil},
		{"a://x/{a}-{b}", "a://x/left-right", map[string]string{"a": "left", "b": "right"}},
		{"a://x/{a}{.ext}", "a://x/file.txt", map[string]string{"a": "file", "ext": "txt"}},
		{"a://x/{x,y}", "a://x/1,2", map[string]string{"x": "1", "y": "2"}},
		{"a://x{#frag}", "a://x#top", map[string]string{"frag": "top"}},
		{"a://x/{a}", "b://x/1", nil},
	} {
		c, err := Compile(tc.template)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.template, err)
		}
		got, ok := c.Match(tc.uri)
		if ok != (tc.want != nil) || ok && !maps.Equal(got, tc.want) {
			t.Errorf("%q matching %q = %v, %v; want %v", tc.template, tc.uri, got, ok, tc.want)
		}
	}
}

// TestMatchIsLinear: the template and URI the bounds allow that make a
// backtracking matcher try every split (every expression may take any
// length, and the match fails only at the end) cost one pass: Go's regexp
// does not backtrack. Counted by the URIs matched, not timed.
func TestMatchIsLinear(t *testing.T) {
	c, err := Compile("a://{+a}{+b}{+c}{+d}{+e}{+f}{+g}{+h}Q")
	if err != nil {
		t.Fatal(err)
	}
	uri := "a://" + strings.Repeat("y", abi.MaxURIBytes-len("a://"))
	for range 100 {
		if _, ok := c.Match(uri); ok {
			t.Fatal("matched a URI without the final literal")
		}
	}
}

func FuzzMatch(f *testing.F) {
	f.Add("a://x/{id}{?q}", "a://x/1?q=2")
	f.Add("file:///{+path}", "file:///%zz")
	f.Fuzz(func(t *testing.T, tmpl, uri string) {
		c, err := Compile(tmpl)
		if err != nil {
			return
		}
		vars, ok := c.Match(uri)
		if !ok {
			return
		}
		names, _ := abi.TemplateVars(tmpl)
		for k := range vars {
			found := false
			for _, n := range names {
				found = found || n == k
			}
			if !found {
				t.Fatalf("matched variable %q that %q does not name", k, tmpl)
			}
		}
	})
}
