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

	// The lists, and the module of each item.
	resourceList []abi.Resource
	resourceMods []string
	templateList []abi.ResourceTemplate
	templateMods []string
	promptList   []abi.Prompt
	promptMods   []string
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
			t.resourceMods = append(t.resourceMods, s.Module)
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
			t.templateMods = append(t.templateMods, s.Module)
		}
		for _, p := range m.Prompts {
			if e, dup := t.prompts[p.Name]; dup {
				t.conflicts = append(t.conflicts, Conflict{Module: s.Module, Kind: "prompt", Name: p.Name, Owner: e.module})
				continue
			}
			t.prompts[p.Name] = entry[M, abi.Prompt]{s.Module, s.Code, p}
			t.promptList = append(t.promptList, p)
			t.promptMods = append(t.promptMods, s.Module)
		}
	}
	t.resourceList, t.resourceMods = sortBy(t.resourceList, t.resourceMods, func(r *abi.Resource) string { return r.URI })
	t.promptList, t.promptMods = sortBy(t.promptList, t.promptMods, func(p *abi.Prompt) string { return p.Name })
	return t
}

// sortBy sorts list by key, keeping each item's module beside it.
func sortBy[D any](list []D, mods []string, key func(*D) string) ([]D, []string) {
	idx := make([]int, len(list))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(key(&list[a]), key(&list[b])) })
	l, m := make([]D, len(list)), make([]string, len(list))
	for i, j := range idx {
		l[i], m[i] = list[j], mods[j]
	}
	return l, m
}

// Visible says whether a declaration (named by its URI, URI template or
// prompt name) served from module may be shown; nil: all may.
type Visible = func(name, module string) bool

// Resources lists the served resources that visible admits, by URI.
// With a nil visible the slice is shared: do not modify it.
func (t *Table[M]) Resources(visible Visible) []abi.Resource {
	return filter(t.resourceList, t.resourceMods, func(r *abi.Resource) string { return r.URI }, visible)
}

// Templates lists the served resource templates that visible admits, in
// serving order (the order a read tries them).
func (t *Table[M]) Templates(visible Visible) []abi.ResourceTemplate {
	return filter(t.templateList, t.templateMods, func(r *abi.ResourceTemplate) string { return r.URITemplate }, visible)
}

// Prompts lists the served prompts that visible admits, by name.
func (t *Table[M]) Prompts(visible Visible) []abi.Prompt {
	return filter(t.promptList, t.promptMods, func(p *abi.Prompt) string { return p.Name }, visible)
}

// Modules are the modules serving each item of the lists, in their order.
func (t *Table[M]) Modules() (resources, templates, prompts []string) {
	return t.resourceMods, t.templateMods, t.promptMods
}

func filter[D any](list []D, mods []string, name func(*D) string, visible Visible) []D {
	if visible == nil {
		return list
	}
	out := make([]D, 0, len(list))
	for i := range list {
		if visible(name(&list[i]), mods[i]) {
			out = append(out, list[i])
		}
	}
	return out
}

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
	MIMEType  string         // the declaration's, if any
	Cache     *abi.CacheHint // the declaration's, if any
}

// Route finds the module that serves uri: a declared resource, else the
// first template (in serving order) that matches it.
func (t *Table[M]) Route(uri string) (Read[M], bool) {
	if e, ok := t.resources[uri]; ok {
		return Read[M]{Module: e.module, Code: e.code, MIMEType: e.decl.MIMEType, Cache: e.decl.Cache}, true
	}
	for _, tm := range t.templates {
		if vars, ok := tm.t.Match(uri); ok {
			return Read[M]{Module: tm.module, Code: tm.code, Template: tm.decl.URITemplate, Variables: vars, MIMEType: tm.decl.MIMEType, Cache: tm.decl.Cache}, true
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
