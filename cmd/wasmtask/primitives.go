package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
)

// This file has the commands that exercise what a module serves beside its
// tools (ABI 1.2): read, prompt and complete. Each runs one request as the
// server would, under the module's default limits, and prints the answer's
// JSON as call prints a result.

const readUsage = `usage: wasmtask read FILE.wasm URI [--timeout D] [--memory-mib N]

Reads the resource URI in the sandbox, as resources/read would (a resource
the module declares, or a URI that matches one of its resource templates),
and prints the answer JSON on stdout: its contents, each a text or a base64
blob, with its mimeType. Exits 1 when the read fails or the module answers
with an error.

Flags:
`

const promptUsage = `usage: wasmtask prompt FILE.wasm NAME [--arg NAME=VALUE]... [--timeout D] [--memory-mib N]

Renders the prompt NAME in the sandbox, as prompts/get would, with the
arguments given by --arg, and prints the answer JSON on stdout: its
messages. Exits 1 when the prompt fails, a required argument is missing,
or the module answers with an error.

Flags:
`

const completeUsage = `usage: wasmtask complete FILE.wasm prompt:NAME|template:URITEMPLATE ARG [VALUE] [--arg NAME=VALUE]...

Asks the module, as completion/complete would, for the values that
complete argument ARG of prompt NAME, or variable ARG of the resource
template URITEMPLATE, from VALUE as typed so far (default empty); --arg
gives the arguments already chosen. Prints the answer JSON on stdout: its
values. Exits 1 when the module does not declare that it completes ARG,
the completion fails, or the module answers with an error.

Flags:
`

// errAnswerError makes a command exit 1 after it printed the module's
// error answer.
var errAnswerError = errors.New("the module answered with an error")

// primCommand is one of read, prompt and complete.
type primCommand struct {
	name, usage string
	// want names the positional arguments after FILE.wasm; the last
	// optional of them may be left out.
	want     []string
	optional int
	withArgs bool // takes --arg NAME=VALUE
	// do sends the request to srv, which serves module, and returns the
	// answer and the module's own error answer in it.
	do func(ctx context.Context, srv *host.Server, module string, pos []string, args map[string]string) (answer any, answerErr *abi.ProtocolError, err error)
}

// run parses args, loads the module and runs the request.
func (c primCommand) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// The answer, and errors quoting the module, reach both streams.
	stdout, stderr = visibleWriter{stdout}, visibleWriter{stderr}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), c.usage); fs.PrintDefaults() }
	given := map[string]string{}
	if c.withArgs {
		fs.Func("arg", "an argument `NAME=VALUE` (repeat for more)", func(s string) error {
			k, v, ok := strings.Cut(s, "=")
			if _, dup := given[k]; dup {
				return fmt.Errorf("argument %q given twice", k)
			}
			if !ok || k == "" {
				return fmt.Errorf("want NAME=VALUE, got %q", s)
			}
			given[k] = v
			return nil
		})
	}
	rf := addRunFlags(fs, c.name)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if n := len(pos) - 1; n < len(c.want)-c.optional || n > len(c.want) {
		fs.Usage()
		want := slices.Clone(c.want)
		for i := len(want) - c.optional; i < len(want); i++ {
			want[i] = "[" + want[i] + "]"
		}
		return fmt.Errorf("%s: want FILE.wasm and %s, got %d arguments", c.name, strings.Join(want, " "), len(pos))
	}
	srv, module, err := rf.open(ctx, pos[0])
	if err != nil {
		return err
	}
	defer srv.Close()
	answer, answerErr, err := c.do(ctx, srv, module, pos[1:], given)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(answer); err != nil {
		return err
	}
	if answerErr != nil {
		return errAnswerError
	}
	return nil
}

// runRead is `wasmtask read`.
func runRead(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return primCommand{name: "read", usage: readUsage, want: []string{"URI"},
		do: func(ctx context.Context, srv *host.Server, module string, pos []string, _ map[string]string) (any, *abi.ProtocolError, error) {
			uri := pos[0]
			if err := abi.CheckURI(uri); err != nil {
				return nil, nil, fmt.Errorf("read: not a resource URI: %v", err)
			}
			res, err := srv.ReadResource(ctx, uri)
			if errors.Is(err, host.ErrUnknownResource) {
				return nil, nil, fmt.Errorf("read: module %s serves no resource %q", module, uri)
			}
			if err != nil {
				return nil, nil, err
			}
			return res, res.Error, nil
		}}.run(ctx, args, stdout, stderr)
}

// runPrompt is `wasmtask prompt`.
func runPrompt(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return primCommand{name: "prompt", usage: promptUsage, want: []string{"NAME"}, withArgs: true,
		do: func(ctx context.Context, srv *host.Server, module string, pos []string, args map[string]string) (any, *abi.ProtocolError, error) {
			res, err := srv.GetPrompt(ctx, pos[0], args)
			if errors.Is(err, host.ErrUnknownPrompt) {
				return nil, nil, fmt.Errorf("prompt: module %s has no prompt %q", module, pos[0])
			}
			if err != nil {
				return nil, nil, err
			}
			return res, res.Error, nil
		}}.run(ctx, args, stdout, stderr)
}

// runComplete is `wasmtask complete`.
func runComplete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return primCommand{name: "complete", usage: completeUsage, want: []string{"prompt:NAME|template:URITEMPLATE", "ARG", "VALUE"}, optional: 1, withArgs: true,
		do: func(ctx context.Context, srv *host.Server, module string, pos []string, args map[string]string) (any, *abi.ProtocolError, error) {
			ref, err := completionRef(srv, module, pos[0], pos[1])
			if err != nil {
				return nil, nil, err
			}
			arg := abi.CompleteArgument{Name: pos[1]}
			if len(pos) > 2 {
				arg.Value = pos[2]
			}
			res, err := srv.Complete(ctx, ref, arg, args)
			if err != nil {
				return nil, nil, err
			}
			return res, res.Error, nil
		}}.run(ctx, args, stdout, stderr)
}

// completionRef parses ref ("prompt:NAME" or "template:URITEMPLATE") and
// checks that module declares it completes arg of it: the server answers
// a completion nothing declares with no values, which would not tell the
// author why.
func completionRef(srv *host.Server, module, ref, arg string) (abi.CompleteRef, error) {
	kind, name, _ := strings.Cut(ref, ":")
	var completes []string
	switch kind {
	case "prompt":
		prompts := srv.Prompts()
		i := slices.IndexFunc(prompts, func(p host.PromptInfo) bool { return p.Name == name })
		if i < 0 {
			return abi.CompleteRef{}, fmt.Errorf("complete: module %s has no prompt %q", module, name)
		}
		for _, a := range prompts[i].Arguments {
			if a.Complete {
				completes = append(completes, a.Name)
			}
		}
	case "template":
		templates := srv.ResourceTemplates()
		i := slices.IndexFunc(templates, func(t host.ResourceTemplateInfo) bool { return t.URITemplate == name })
		if i < 0 {
			return abi.CompleteRef{}, fmt.Errorf("complete: module %s has no resource template %q", module, name)
		}
		completes = templates[i].Complete
	default:
		return abi.CompleteRef{}, fmt.Errorf("complete: want prompt:NAME or template:URITEMPLATE, got %q", ref)
	}
	if !slices.Contains(completes, arg) {
		have := "none"
		if len(completes) > 0 {
			have = strings.Join(completes, ", ")
		}
		return abi.CompleteRef{}, fmt.Errorf("complete: %s %s does not declare that it completes %q (it completes: %s)", kind, name, arg, have)
	}
	if kind == "prompt" {
		return abi.CompleteRef{Type: abi.RefPrompt, Name: name}, nil
	}
	return abi.CompleteRef{Type: abi.RefResource, URI: name}, nil
}
