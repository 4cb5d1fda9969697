package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
)

const callUsage = `usage: wasmtask call FILE.wasm TOOL [--args JSON] [--timeout D] [--memory-mib N]

Runs one call of TOOL in the sandbox, as the server would, and prints the
result JSON on stdout. Progress, status and the tool's log go to stderr (a
progress bar on a terminal). When the tool asks for input, the questions are
asked on stdin, one line per answer. Exits 1 when the call fails or the
result has isError set.

Flags:
`

// terminal is what the call command needs to know about its streams.
type terminal struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	tty            bool // stderr is a terminal: draw a progress bar
}

// runCall is `wasmtask call`.
func runCall(ctx context.Context, args []string, term terminal) error {
	// Guest text reaches both streams; only the progress bar's own
	// terminal codes go to stderr as they are.
	rawStderr := term.stderr
	term.stdout, term.stderr = visibleWriter{term.stdout}, visibleWriter{term.stderr}
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	fs.SetOutput(term.stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), callUsage); fs.PrintDefaults() }
	argsJSON := fs.String("args", "{}", "tool arguments, a JSON `object`")
	rf := addRunFlags(fs, "call")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fs.Usage()
		return fmt.Errorf("call: want FILE.wasm and TOOL, got %d arguments", len(pos))
	}
	file, tool := pos[0], pos[1]
	if !json.Valid([]byte(*argsJSON)) {
		return fmt.Errorf("call: --args is not valid JSON: %s", *argsJSON)
	}
	srv, name, err := rf.open(ctx, file)
	if err != nil {
		return err
	}
	defer srv.Close()

	ev := &callEvents{bar: &progressBar{w: term.stderr, raw: rawStderr, tty: term.tty}, in: bufio.NewReader(term.stdin), out: term.stderr}
	res, err := srv.Call(ctx, tool, json.RawMessage(*argsJSON), ev)
	ev.bar.clear()
	if errors.Is(err, host.ErrUnknownTool) {
		return fmt.Errorf("call: module %s has no tool %q", name, tool)
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(term.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		return err
	}
	if res.IsError || res.Error != nil {
		return errToolError
	}
	return nil
}

// callEvents shows what the tool reports on stderr and puts its questions
// to the user. It is the call's abi.Events.
type callEvents struct {
	bar *progressBar
	in  *bufio.Reader
	out io.Writer
}

func (e *callEvents) Progress(p, total float64, msg string) { e.bar.progress(p, total, msg) }
func (e *callEvents) Status(msg string)                     { e.bar.line("status: " + msg) }
func (e *callEvents) Log(level int32, msg string)           { e.bar.line(levelName(level) + " " + msg) }

func (e *callEvents) Elicit(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	e.bar.clear()
	return ask(ctx, e.in, e.out, req)
}

var errToolError = errors.New("the tool answered with isError")

func levelName(l int32) string {
	switch l {
	case abi.LogDebug:
		return "[debug]"
	case abi.LogInfo:
		return "[info]"
	case abi.LogWarning:
		return "[warn]"
	default:
		return "[error]"
	}
}

// progressBar draws progress on one line of a terminal, or writes one line
// per report elsewhere. Calls come from the goroutine running the guest.
type progressBar struct {
	w     io.Writer // text
	raw   io.Writer // terminal codes; the same stream as w
	tty   bool
	drawn bool
	last  time.Time
}

const barWidth = 30

func (b *progressBar) progress(p, total float64, msg string) {
	if !b.tty {
		if total > 0 {
			fmt.Fprintf(b.w, "progress %g/%g %s\n", p, total, msg)
		} else {
			fmt.Fprintf(b.w, "progress %g %s\n", p, msg)
		}
		return
	}
	// Redraw at most 20 times a second.
	if now := time.Now(); now.Sub(b.last) < 50*time.Millisecond && p < total {
		return
	} else {
		b.last = now
	}
	var line string
	if total > 0 {
		frac := min(max(p/total, 0), 1)
		n := int(frac * barWidth)
		line = fmt.Sprintf("[%s%s] %3.0f%% %s", strings.Repeat("#", n), strings.Repeat(".", barWidth-n), frac*100, msg)
	} else {
		line = fmt.Sprintf("[%g] %s", p, msg)
	}
	if len(line) > 100 {
		line = line[:100]
	}
	fmt.Fprint(b.raw, "\r\033[K")
	fmt.Fprint(b.w, line)
	b.drawn = true
}

// line writes a message on its own line, keeping the bar below it.
func (b *progressBar) line(s string) {
	b.clear()
	fmt.Fprintln(b.w, s)
}

func (b *progressBar) clear() {
	if b.drawn {
		fmt.Fprint(b.raw, "\r\033[K")
		b.drawn = false
	}
}

// ask puts an elicitation to the user, one line per field. An empty answer
// to the first question declines, "!cancel" cancels; end of input cancels.
func ask(ctx context.Context, in *bufio.Reader, out io.Writer, req abi.ElicitRequest) (abi.ElicitReply, error) {
	var schema struct {
		Properties map[string]struct {
			Type        string `json:"type"`
			Title       string `json:"title"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(req.RequestedSchema, &schema)
	fmt.Fprintf(out, "\nThe tool asks: %s\n(empty answer to the first question: decline; !cancel: cancel)\n", req.Message)
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range schema.Properties {
			if !yield(k) {
				return
			}
		}
	})
	content := map[string]any{}
	for i, n := range names {
		p := schema.Properties[n]
		label := n
		if p.Title != "" {
			label = p.Title
		}
		typ := p.Type
		if typ == "" {
			typ = "string"
		}
		fmt.Fprintf(out, "  %s (%s): ", label, typ)
		line, err := readLine(ctx, in)
		if err != nil {
			return abi.ElicitReply{Action: "cancel"}, nil
		}
		switch {
		case line == "!cancel":
			return abi.ElicitReply{Action: "cancel"}, nil
		case line == "" && i == 0:
			return abi.ElicitReply{Action: "decline"}, nil
		case line == "":
			continue
		}
		v, err := convert(typ, line)
		if err != nil {
			fmt.Fprintf(out, "  %v; sending it as text\n", err)
			v = line
		}
		content[n] = v
	}
	if len(names) == 0 {
		fmt.Fprint(out, "  accept? [y/N]: ")
		line, err := readLine(ctx, in)
		if err != nil || !strings.HasPrefix(strings.ToLower(line), "y") {
			return abi.ElicitReply{Action: "decline"}, nil
		}
	}
	b, _ := json.Marshal(content)
	return abi.ElicitReply{Action: "accept", Content: b}, nil
}

func convert(typ, s string) (any, error) {
	switch typ {
	case "number":
		return strconv.ParseFloat(s, 64)
	case "integer":
		return strconv.ParseInt(s, 10, 64)
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true", "1":
			return true, nil
		case "n", "no", "false", "0":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not yes or no", s)
	}
	return s, nil
}

// readLine reads one line; it gives up when ctx is done (the read itself
// then finishes in the background with the next line typed).
func readLine(ctx context.Context, in *bufio.Reader) (string, error) {
	type result struct {
		s   string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := in.ReadString('\n')
		if err == io.EOF && s != "" {
			err = nil
		}
		ch <- result{strings.TrimRight(s, "\r\n"), err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
