package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
)

const inspectUsage = `usage: wasmtask inspect [--json] [--policy FILE] FILE.wasm

Loads a tool module as the server would (compile, check the ABI, run
describe in the sandbox, validate the manifest) and prints its digest, its
tools with the limits the policy gives each, its resources, resource
templates and prompts with the limits their requests run under, what the
policy grants the module, the server-wide admission bounds, and any
problem found. Exits 1 when there are problems.

The policy grants and limits by module: its entry under "modules" is named
after the file without ".wasm" (FILE.wasm is module FILE) and applies only
while the file's digest matches the entry's "digest" pin, when it has one.
Policy problems include entries that match no module or tool, a digest pin
the file does not match (the module then gets no grants and default
limits), and a tool whose memory limit cannot fit the server's memory
budget.

Flags:
`

// errProblems makes the command exit 1 after it printed the problems.
var errProblems = errors.New("the module has problems")

// runInspect is `wasmtask inspect`.
func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// Everything shown may quote the module: its names, texts, schemas,
	// errors.
	stdout, stderr = visibleWriter{stdout}, visibleWriter{stderr}
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), inspectUsage); fs.PrintDefaults() }
	asJSON := fs.Bool("json", false, "print the validated manifest as JSON instead")
	cacheDir := fs.String("cache-dir", defaultCacheDir(), "compiled-code cache `DIR`; empty disables")
	policyFile := fs.String("policy", "", "show the limits and grants of the operator policy `FILE` (default: the built-in defaults)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return fmt.Errorf("inspect: want one FILE.wasm, got %d arguments", len(pos))
	}
	file := pos[0]
	var policy *host.Policy
	if *policyFile != "" {
		if policy, err = host.LoadPolicy(*policyFile); err != nil {
			return err
		}
	}
	srv, name, wasm, err := openModule(ctx, file, moduleOptions{cacheDir: *cacheDir, policy: policy})
	if err != nil {
		return err
	}
	defer srv.Close()
	tools, problems := srv.Tools(), ownProblems(srv.Problems(), name)
	resources, templates, prompts := srv.Resources(), srv.ResourceTemplates(), srv.Prompts()
	by, served := servedBy(tools, resources, templates, prompts)
	if *asJSON {
		for _, p := range problems {
			fmt.Fprintf(stderr, "%s: %v\n", file, p.Err)
		}
		if !served {
			return errProblems
		}
		doc := map[string]any{"abi": abi.Version, "tools": tools}
		if len(resources) > 0 {
			doc["resources"] = resources
		}
		if len(templates) > 0 {
			doc["resourceTemplates"] = templates
		}
		if len(prompts) > 0 {
			doc["prompts"] = prompts
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return err
		}
		if len(problems) > 0 {
			return errProblems
		}
		return nil
	}
	fmt.Fprintf(stdout, "module:  %s (%s)\n", name, file)
	if served {
		fmt.Fprintf(stdout, "digest:  %s\n", by.Digest)
	}
	fmt.Fprintf(stdout, "size:    %d bytes\n", len(wasm))
	if served {
		fmt.Fprintf(stdout, "abi:     v%d\n", abi.Version)
		fmt.Fprintf(stdout, "tools:   %d\n", len(tools))
		for _, c := range []struct {
			what string
			n    int
		}{{"resources", len(resources)}, {"resource templates", len(templates)}, {"prompts", len(prompts)}} {
			if c.n > 0 {
				fmt.Fprintf(stdout, "%s: %d\n", c.what, c.n)
			}
		}
		printModule(stdout, by, len(tools) > 0, policy, srv.Limits())
	}
	for _, t := range tools {
		printTool(stdout, t)
	}
	if len(resources)+len(templates)+len(prompts) > 0 {
		printPrimitives(stdout, by, resources, templates, prompts)
	}
	if len(problems) == 0 {
		fmt.Fprintln(stdout, "problems: none")
		return nil
	}
	fmt.Fprintln(stdout, "problems:")
	for _, p := range problems {
		fmt.Fprintf(stdout, "  - %v\n", p.Err)
		if hint := explain(p.Err); hint != "" {
			fmt.Fprintf(stdout, "    %s\n", hint)
		}
	}
	return errProblems
}

// ownProblems drops the problems of other modules: a policy written for a
// whole tool directory has entries for modules other than the one
// inspected, which are not problems of this one.
func ownProblems(ps []host.Problem, module string) []host.Problem {
	var own []host.Problem
	for _, p := range ps {
		if p.Module == "" || p.Module == module {
			own = append(own, p)
		}
	}
	return own
}

// printTool shows a tool's declaration and what the policy grants it: the
// numbers a call gets.
func printTool(w io.Writer, ti host.ToolInfo) {
	t := ti.Tool
	fmt.Fprintf(w, "\n  %s", t.Name)
	if t.Title != "" {
		fmt.Fprintf(w, " — %s", t.Title)
	}
	fmt.Fprintf(w, "\n    taskSupport: %s\n", t.TaskSupport)
	if t.Description != "" {
		fmt.Fprintf(w, "    description: %s\n", oneLine(t.Description))
	}
	fmt.Fprintf(w, "    input: %s\n", schemaSummary(t.InputSchema))
	if len(t.OutputSchema) > 0 {
		fmt.Fprintf(w, "    output: %s\n", schemaSummary(t.OutputSchema))
	}
	if c := t.Cache; c != nil && c.Cacheable {
		ttl := "no expiry given"
		if c.TTLMillis > 0 {
			ttl = fmt.Sprintf("ttl %d ms", c.TTLMillis)
		}
		fmt.Fprintf(w, "    cache: cacheable, %s\n", ttl)
		if ti.ResultCacheTTL > 0 {
			fmt.Fprintf(w, "    result cache: results reused for %v\n", ti.ResultCacheTTL)
		} else {
			fmt.Fprintln(w, "    result cache: off (server setting, policy, or a writable mount)")
		}
	} else {
		fmt.Fprintln(w, "    cache: not cacheable")
	}
	if g := t.Grants; g != nil {
		var asks []string
		if len(g.Env) > 0 {
			asks = append(asks, "env "+strings.Join(g.Env, ","))
		}
		for _, d := range g.Dirs {
			mode := "read-only"
			if d.Write {
				mode = "read-write"
			}
			asks = append(asks, fmt.Sprintf("dir %s (%s)", d.GuestPath, mode))
		}
		if g.MemoryMiB > 0 {
			asks = append(asks, fmt.Sprintf("memory %d MiB", g.MemoryMiB))
		}
		if g.TimeoutMs > 0 {
			asks = append(asks, fmt.Sprintf("timeout %d ms", g.TimeoutMs))
		}
		if g.OutputKiB > 0 {
			asks = append(asks, fmt.Sprintf("output %d KiB", g.OutputKiB))
		}
		if len(asks) > 0 {
			fmt.Fprintf(w, "    asks (granted only by the operator's policy): %s\n", strings.Join(asks, "; "))
		}
	}
	printGranted(w, ti.Policy, ti.ReservedMemoryMiB, "call")
}

// printGranted shows the limits p gives one request (a call, a read…) and
// what it reserves of the memory budget.
func printGranted(w io.Writer, p host.ToolPolicy, reservedMiB int, request string) {
	fmt.Fprintf(w, "    granted: memory %d MiB, timeout %v, output %d bytes, log %d bytes, %d concurrent %ss (+%d queued)\n",
		p.MemoryMiB, time.Duration(p.Timeout), p.MaxOutputBytes, p.MaxLogBytes, p.MaxConcurrency, request, p.MaxQueue)
	fmt.Fprintf(w, "    reserves: %d MiB of the server's memory budget per %s\n", reservedMiB, request)
}

// servedBy is the module as its first served declaration reports it: a
// resource, template or prompt, which says what all of them run under;
// else a tool, whose module facts are the same (its own limits are left
// out). ok is false when the module serves nothing (it did not load).
func servedBy(tools []host.ToolInfo, resources []host.ResourceInfo, templates []host.ResourceTemplateInfo, prompts []host.PromptInfo) (by host.ServedBy, ok bool) {
	switch {
	case len(resources) > 0:
		return resources[0].ServedBy, true
	case len(templates) > 0:
		return templates[0].ServedBy, true
	case len(prompts) > 0:
		return prompts[0].ServedBy, true
	case len(tools) > 0:
		t := tools[0]
		return host.ServedBy{Module: t.Module, Digest: t.Digest, Grants: t.Grants, ModuleInstances: t.ModuleInstances, ModuleMemoryMiB: t.ModuleMemoryMiB}, true
	}
	return host.ServedBy{}, false
}

// printPrimitives shows the module's resources, resource templates and
// prompts, after the limits their requests run under (by's: the module's
// defaults, the same for all of them).
func printPrimitives(w io.Writer, by host.ServedBy, resources []host.ResourceInfo, templates []host.ResourceTemplateInfo, prompts []host.PromptInfo) {
	fmt.Fprintln(w, "\n  resources and prompts (reads, prompts and completions run under the module's default limits)")
	printGranted(w, by.Policy, by.ReservedMemoryMiB, "request")
	for _, r := range resources {
		fmt.Fprintf(w, "\n  resource %s", r.URI)
		printDisplay(w, r.Name, r.Title, r.Description, r.MIMEType, r.Annotations, r.Cache)
		if r.Size != nil {
			fmt.Fprintf(w, "    size: %d bytes\n", *r.Size)
		}
	}
	for _, t := range templates {
		fmt.Fprintf(w, "\n  template %s", t.URITemplate)
		printDisplay(w, t.Name, t.Title, t.Description, t.MIMEType, t.Annotations, t.Cache)
		if len(t.Complete) > 0 {
			fmt.Fprintf(w, "    completes: %s\n", strings.Join(t.Complete, ", "))
		}
	}
	for _, p := range prompts {
		fmt.Fprintf(w, "\n  prompt %s", p.Name)
		if p.Title != "" {
			fmt.Fprintf(w, " — %s", p.Title)
		}
		fmt.Fprintln(w)
		if p.Description != "" {
			fmt.Fprintf(w, "    description: %s\n", oneLine(p.Description))
		}
		fmt.Fprintf(w, "    arguments: %s\n", promptArguments(p.Arguments))
	}
}

// printDisplay ends a resource's or template's first line with its title
// and shows what it declares for a client.
func printDisplay(w io.Writer, name, title, desc, mimeType string, ann *abi.ResourceAnnotations, cache *abi.CacheHint) {
	if title != "" {
		fmt.Fprintf(w, " — %s", title)
	}
	fmt.Fprintf(w, "\n    name: %s\n", name)
	if mimeType != "" {
		fmt.Fprintf(w, "    mimeType: %s\n", mimeType)
	}
	if desc != "" {
		fmt.Fprintf(w, "    description: %s\n", oneLine(desc))
	}
	if ann != nil {
		var parts []string
		if len(ann.Audience) > 0 {
			parts = append(parts, "audience "+strings.Join(ann.Audience, ","))
		}
		if ann.Priority != nil {
			parts = append(parts, fmt.Sprintf("priority %g", *ann.Priority))
		}
		if ann.LastModified != "" {
			parts = append(parts, "lastModified "+ann.LastModified)
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "    annotations: %s\n", strings.Join(parts, "; "))
		}
	}
	if cache != nil && cache.Cacheable {
		ttl := "no expiry given"
		if cache.TTLMillis > 0 {
			ttl = fmt.Sprintf("ttl %d ms", cache.TTLMillis)
		}
		fmt.Fprintf(w, "    cache: cacheable, %s\n", ttl)
	}
}

// promptArguments renders a prompt's arguments as
// "who (required, completes), lang", as schemaSummary renders a tool's
// input.
func promptArguments(args []abi.PromptArgument) string {
	if len(args) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(args))
	for _, a := range args {
		var marks []string
		if a.Required {
			marks = append(marks, "required")
		}
		if a.Complete {
			marks = append(marks, "completes")
		}
		part := a.Name
		if len(marks) > 0 {
			part += " (" + strings.Join(marks, ", ") + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// printModule shows what the policy gives the module as a whole (its
// grants, its instance cap, whether an entry applies) and the server-wide
// bounds its requests are admitted under; hasTools words the cap for its
// tools' calls.
func printModule(w io.Writer, ti host.ServedBy, hasTools bool, pol *host.Policy, lim host.Limits) {
	entry, ok := host.ModulePolicy{}, false
	if pol != nil {
		entry, ok = pol.Modules[ti.Module]
	}
	switch {
	case !ok:
		fmt.Fprintf(w, "policy:  no entry for module %q: default limits, no grants\n", ti.Module)
	case entry.Digest == "":
		fmt.Fprintf(w, "policy:  entry modules.%s applies (not pinned to a digest)\n", ti.Module)
	case entry.Digest == ti.Digest:
		fmt.Fprintf(w, "policy:  entry modules.%s applies (pinned to this digest)\n", ti.Module)
	default:
		fmt.Fprintf(w, "policy:  entry modules.%s does NOT apply: it pins %s (default limits, no grants)\n", ti.Module, entry.Digest)
	}
	requests, request := "calls of this module's tools", "call"
	if !hasTools {
		requests, request = "requests of this module", "request"
	}
	fmt.Fprintf(w, "admits:  at most %d %s at once, reserving at most %d MiB together (one %s alone may reserve more)\n", ti.ModuleInstances, requests, ti.ModuleMemoryMiB, request)
	g := ti.Grants
	for _, m := range g.Mounts {
		mode := "read-only"
		if m.Write {
			mode = "read-write"
		}
		fmt.Fprintf(w, "granted: dir %s at %s (%s)\n", m.HostDir, m.GuestPath, mode)
	}
	if n := len(g.Env) + len(g.PassEnv); n > 0 {
		names := slices.Sorted(maps.Keys(g.Env))
		names = append(names, g.PassEnv...)
		fmt.Fprintf(w, "granted: env %s\n", strings.Join(names, ","))
	}
	fmt.Fprintf(w, "server:  %d instances at once, memory budget %d MiB (%s)\n", lim.MaxInstances, lim.MemoryBudgetMiB, lim.MemoryBudgetSrc)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// schemaSummary renders an object schema's properties as
// "a: number (required), b: string".
func schemaSummary(raw json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return "(unreadable schema)"
	}
	if len(s.Properties) == 0 {
		return "object, no declared properties"
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range s.Properties {
			if !yield(k) {
				return
			}
		}
	})
	parts := make([]string, 0, len(names))
	for _, n := range names {
		p := s.Properties[n]
		typ := "any"
		switch t := p.Type.(type) {
		case string:
			typ = t
		case []any:
			var ts []string
			for _, x := range t {
				ts = append(ts, fmt.Sprint(x))
			}
			typ = strings.Join(ts, "|")
		}
		part := n + ": " + typ
		if slices.Contains(s.Required, n) {
			part += " (required)"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// explain adds what to do about a load error.
func explain(err error) string {
	var ge *host.GuestError
	switch {
	case errors.Is(err, host.ErrNotWasm):
		return "hint: pass the compiled .wasm binary (not .wat source, not a native executable)."
	case errors.Is(err, host.ErrComponent):
		return "hint: wasmtask runs core modules of WASI preview 1: GOOS=wasip1 GOARCH=wasm go build; cargo build --target wasm32-wasip1 (or wasm32-wasi); clang --target=wasm32-wasi."
	case errors.Is(err, host.ErrCompile):
		return "hint: the binary is damaged or uses a Wasm feature wazero does not support."
	case errors.Is(err, abi.ErrVersion):
		return fmt.Sprintf("hint: rebuild the module against wasmtask ABI v%d (import module %q).", abi.Version, abi.ImportModule)
	case errors.Is(err, host.ErrModuleABI) && strings.Contains(err.Error(), abi.ExportStart):
		return "hint: a tool is a WASI command: GOOS=wasip1 GOARCH=wasm go build (no -buildmode=c-shared); clang --target=wasm32-wasi without -mexec-model=reactor."
	case errors.Is(err, host.ErrModuleABI):
		return fmt.Sprintf("hint: import only wasi_snapshot_preview1 and the functions of %q listed in ABI.md.", abi.ImportModule)
	case errors.Is(err, abi.ErrManifest):
		return `hint: the module's answer to {"abi":1,"method":"describe"} on stdin is not a valid manifest (see ABI.md).`
	case errors.Is(err, host.ErrSchema):
		return "hint: fix the tool's inputSchema or outputSchema: a JSON Schema object without reference cycles, within the limits in ABI.md."
	case errors.As(err, &ge):
		return `hint: the module failed while describing itself: run it with {"abi":1,"method":"describe"} on stdin to see why.`
	}
	return ""
}

// parseInterleaved parses flags that may come before, between or after the
// positional arguments, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
