package primitives

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/uritemplate"
)

// Source is one module's declarations, and what the server runs for them
// (M: its module).
type Source[M any] struct {
	Module   string // the module's name
	Manifest *abi.Manifest
	Code     M
}

// Conflict is a declaration not served because an earlier module serves
// the same URI, template or prompt name.
type Conflict struct {
	Module string // the module whose declaration is not served
	Kind   string // "resource", "resource template" or "prompt"
	Name   string // the URI, template or prompt name
	Owner  string // the module that serves it
}

func (c Conflict) Error() string {
	return fmt.Sprintf("%s %q is served by module %s", c.Kind, c.Name, c.Owner)
}

// Table is what a generation serves.
type Table[M any] struct {
	resources map[string]entry[M, abi.Resource]
	templates []template[M]
	prompts   map[string]entry[M, abi.Prompt]

	resourceList []abi.Resource
	templateList []abi.ResourceTemplate
	promptList   []abi.Prompt
	conflicts    []Conflict
}

type entry[M any, D any] struct {
	module string
	code   M
	decl   D
}

type template[M any] struct {
	entry[M, abi.ResourceTemplate]
	t *uritemplate.Template
}

// Build makes the table of sources, in their order: the first to declare
// a URI, a template or a prompt serves it.
func Build[M any](sources []Source[M]) *Table[M] {
	t := &Table[M]{resources: map[string]entry[M, abi.Resource]{}, prompts: map[string]entry[M, abi.Prompt]{}}
	seenTemplate := map[string]string{}
	for _, s := range sources {
		m := s.Manifest
		if m == nil {
			continue
		}
		for _, r := range m.Resources {
			if e, dup := t.resources[r.URI]; dup {
				t.conflicts = append(t.conflicts, Conflict{Module: s.Module, Kind: "resource", Name: r.URI, Owner: e.module})
				continue
			}
			t.resources[r.URI] = entry[M, abi.Resource]{s.Module, s.Code, r}
			t.resourceList = append(t.resourceList, r)
		}
		for _, rt := range m.ResourceTemplates {
			if owner, dup := seenTemplate[rt.URITemplate]; dup {
				t.conflicts = append(t.conflicts, Conflict{Module: s.Module, Kind: "resource template", Name: rt.URITemplate, Owner: owner})
				continue
			}
			c, err := uritemplate.Compile(rt.URITemplate)
			if err != nil {
				continue // abi.DecodeManifest checked it with the same parser
			}
			seenTemplate[rt.URITemplate] = s.Module
			t.templates = append(t.templates, template[M]{entry[M, abi.ResourceTemplate]{s.Module, s.Code, rt}, c})
			t.templateList = append(t.templateList, rt)
		}
		for _, p := range m.Prompts {
			if e, dup := t.prompts[p.Name]; dup {
				t.conflicts = append(t.conflicts, Conflict{Module: s.Module, Kind: "prompt", Name: p.Name, Owner: e.module})
				continue
			}
			t.prompts[p.Name] = entry[M, abi.Prompt]{s.Module, s.Code, p}
			t.promptList = append(t.promptList, p)
		}
	}
	slices.SortFunc(t.resourceList, func(a, b abi.Resource) int { return cmp.Compare(a.URI, b.URI) })
	slices.SortFunc(t.promptList, func(a, b abi.Prompt) int { return cmp.Compare(a.Name, b.Name) })
	return t
}

// Resources lists the served resources, by URI.
func (t *Table[M]) Resources() []abi.Resource { return t.resourceList }

// Templates lists the served resource templates, in serving order (the
// order a read tries them).
func (t *Table[M]) Templates() []abi.ResourceTemplate { return t.templateList }

// Prompts lists the served prompts, by name.
func (t *Table[M]) Prompts() []abi.Prompt { return t.promptList }

// Conflicts are the declarations not served.
func (t *Table[M]) Conflicts() []Conflict { return t.conflicts }

// Empty reports whether the table serves nothing.
func (t *Table[M]) Empty() bool {
	return len(t.resourceList) == 0 && len(t.templateList) == 0 && len(t.promptList) == 0
}

// Read is where a read of a URI goes: the module, and when the URI
// matched a template, the template and its variables.
type Read[M any] struct {
	Module    string
	Code      M
	Template  string
	Variables map[string]string
	MIMEType  string // the declaration's, if any
}

// Route finds the module that serves uri: a declared resource, else the
// first template (in serving order) that matches it.
func (t *Table[M]) Route(uri string) (Read[M], bool) {
	if e, ok := t.resources[uri]; ok {
		return Read[M]{Module: e.module, Code: e.code, MIMEType: e.decl.MIMEType}, true
	}
	for _, tm := range t.templates {
		if vars, ok := tm.t.Match(uri); ok {
			return Read[M]{Module: tm.module, Code: tm.code, Template: tm.decl.URITemplate, Variables: vars, MIMEType: tm.decl.MIMEType}, true
		}
	}
	return Read[M]{}, false
}

// Prompt finds the module that serves prompt name, and its declaration.
func (t *Table[M]) Prompt(name string) (module string, code M, decl abi.Prompt, ok bool) {
	e, ok := t.prompts[name]
	return e.module, e.code, e.decl, ok
}

// Completer finds the module that completes argument arg of ref, when it
// declares that it does.
func (t *Table[M]) Completer(ref abi.CompleteRef, arg string) (module string, code M, ok bool) {
	switch ref.Type {
	case abi.RefPrompt:
		e, found := t.prompts[ref.Name]
		if found && slices.ContainsFunc(e.decl.Arguments, func(a abi.PromptArgument) bool { return a.Name == arg && a.Complete }) {
			return e.module, e.code, true
		}
	case abi.RefResource:
		for _, tm := range t.templates {
			if tm.decl.URITemplate == ref.URI && slices.Contains(tm.decl.Complete, arg) {
				return tm.module, tm.code, true
			}
		}
	}
	var zero M
	return "", zero, false
}
