package examples_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// wtImport matches a C declaration of a host function with the WT_IMPORT
// macro, as ABI.md and examples/c/wasmtask.h write them.
var wtImport = regexp.MustCompile(`(?m)^WT_IMPORT\("([a-z_]+)"\)\s+([^;]+;)`)

// cImports returns the host functions text declares with WT_IMPORT, by
// import name, each declaration with its spacing collapsed.
func cImports(t *testing.T, what, text string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range wtImport.FindAllStringSubmatch(text, -1) {
		decl := strings.Join(strings.Fields(m[2]), " ")
		if prev, ok := out[m[1]]; ok && prev != decl {
			t.Errorf("%s declares %s twice, differently: %q and %q", what, m[1], prev, decl)
		}
		out[m[1]] = decl
	}
	return out
}

// hostFunctions returns the names of the host functions package abi
// defines: the values of its Func* constants, read from its source so that
// a function added there and not to the header fails the test.
func hostFunctions(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../abi/abi.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, id := range v.Names {
				if !strings.HasPrefix(id.Name, "Func") || i >= len(v.Values) {
					continue
				}
				lit, ok := v.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("abi.%s is not a string literal", id.Name)
				}
				name, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, name)
			}
		}
	}
	if len(names) == 0 {
		t.Fatal("no Func constant in abi/abi.go")
	}
	return names
}

// TestCHeader checks examples/c/wasmtask.h, the one file of declarations C
// authors copy: it declares every host function abi defines and nothing
// else, each exactly as ABI.md prints it; and the C examples declare none
// themselves, so they cannot drift from it.
func TestCHeader(t *testing.T) {
	header, err := os.ReadFile("c/wasmtask.h")
	if err != nil {
		t.Fatal(err)
	}
	declared := cImports(t, "wasmtask.h", string(header))
	funcs := hostFunctions(t)
	for _, name := range funcs {
		if _, ok := declared[name]; !ok {
			t.Errorf("wasmtask.h does not declare the host function %s", name)
		}
	}
	for name := range declared {
		if !slices.Contains(funcs, name) {
			t.Errorf("wasmtask.h declares %s, which is no host function of package abi", name)
		}
	}
	doc := abiMD(t)
	const macro = `#define WT_IMPORT(name) __attribute__((import_module("wasmtask_v1"), import_name(name)))`
	if !strings.Contains(string(header), macro+"\n") || !strings.Contains(doc, macro+"\n") {
		t.Errorf("wasmtask.h and ABI.md must both define WT_IMPORT as %s", macro)
	}
	documented := cImports(t, "ABI.md", doc)
	if len(documented) == 0 {
		t.Fatal("ABI.md declares no host function with WT_IMPORT")
	}
	for name, decl := range documented {
		if declared[name] != decl {
			t.Errorf("ABI.md declares %s as %q, wasmtask.h as %q", name, decl, declared[name])
		}
	}

	sources, err := filepath.Glob("c/*.c")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sources {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), "#include \"wasmtask.h\"\n") {
			t.Errorf("%s does not include wasmtask.h", name)
		}
		if strings.Contains(string(src), "import_module") || wtImport.Match(src) {
			t.Errorf("%s declares host functions itself: include them from wasmtask.h", name)
		}
	}
}
