// Command demo is a wasmtask tool module written with the Go guest SDK. It
// declares three tools that show the three kinds of task support:
//
//   - word_count (taskSupport forbidden): a quick, cacheable, pure function;
//   - slow_count (optional): counts slowly, reporting progress at every step;
//   - long_job (required): does half its work, asks the user to confirm
//     through elicitation, then finishes or stops.
//
// Build (from the repository root):
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildvcs=false -ldflags=-buildid= -o demo.wasm ./examples/go/demo
package main

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/abi/guest"
)

// The types the handlers encode and decode themselves: a pre-initialised
// build (ABI.md section 13) prepares encoding/json for them once, at load.
func init() { guest.Warm(wordCountResult{}, longJobResult{}, confirmation{}) }

func main() {
	guest.Run(wordCount, slowCount, longJob)
}

func ptr[T any](v T) *T { return &v }

// word_count: quick, so task support is forbidden.

type wordCountArgs struct {
	Text string `json:"text"`
}

type wordCountResult struct {
	Words int `json:"words"`
	Lines int `json:"lines"`
	Chars int `json:"chars"`
}

var wordCount = guest.Tool{
	Name:        "word_count",
	Title:       "Word count",
	Description: "Counts the words, lines and characters of a text.",
	InputSchema: `{"type":"object","properties":{"text":{"type":"string","description":"the text to count"}},"required":["text"]}`,
	OutputSchema: `{"type":"object","properties":{"words":{"type":"integer"},"lines":{"type":"integer"},"chars":{"type":"integer"}},` +
		`"required":["words","lines","chars"]}`,
	Annotations: &abi.Annotations{ReadOnlyHint: ptr(true), IdempotentHint: ptr(true), OpenWorldHint: ptr(false)},
	TaskSupport: abi.TaskForbidden,
	Cache:       &abi.CacheHint{Cacheable: true, TTLMillis: int64(time.Hour / time.Millisecond)},
	Handler: guest.Handle(func(c *guest.Call, in wordCountArgs) (guest.Result, error) {
		out := wordCountResult{
			Words: len(strings.Fields(in.Text)),
			Lines: strings.Count(in.Text, "\n"),
			Chars: utf8.RuneCountInString(in.Text),
		}
		if in.Text != "" && !strings.HasSuffix(in.Text, "\n") {
			out.Lines++
		}
		res, err := guest.Structured(out)
		if err != nil {
			return res, err
		}
		res.Content[0].Text = fmt.Sprintf("%d words, %d lines, %d characters", out.Words, out.Lines, out.Chars)
		return res, nil
	}),
}

// slow_count: long enough to be worth a task, short enough to call directly.

type countArgs struct {
	Steps   int `json:"steps"`
	DelayMs int `json:"delay_ms"`
}

const countSchema = `{"type":"object","properties":{` +
	`"steps":{"type":"integer","minimum":1,"maximum":10000,"description":"how many steps"},` +
	`"delay_ms":{"type":"integer","minimum":0,"maximum":60000,"description":"time per step in milliseconds (default 100)"}},` +
	`"required":["steps"]}`

func (a *countArgs) check() error {
	if a.Steps < 1 || a.Steps > 10000 {
		return fmt.Errorf("steps is %d, want 1 to 10000", a.Steps)
	}
	if a.DelayMs < 0 || a.DelayMs > 60000 {
		return fmt.Errorf("delay_ms is %d, want 0 to 60000", a.DelayMs)
	}
	return nil
}

var slowCount = guest.Tool{
	Name:         "slow_count",
	Title:        "Slow count",
	Description:  "Counts to steps, waiting delay_ms (default 100) at each step and reporting progress.",
	InputSchema:  countSchema,
	OutputSchema: `{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`,
	Annotations:  &abi.Annotations{ReadOnlyHint: ptr(true), OpenWorldHint: ptr(false)},
	TaskSupport:  abi.TaskOptional,
	Grants:       &abi.Grants{TimeoutMs: 10 * 60 * 1000},
	Handler: guest.Handle(func(c *guest.Call, in countArgs) (guest.Result, error) {
		if in.DelayMs == 0 {
			in.DelayMs = 100
		}
		if err := in.check(); err != nil {
			return guest.Result{}, err
		}
		for i := 1; i <= in.Steps; i++ {
			sleep(time.Duration(in.DelayMs) * time.Millisecond)
			c.Progress(float64(i), float64(in.Steps), fmt.Sprintf("step %d of %d", i, in.Steps))
		}
		res, err := guest.Structured(struct {
			Count int `json:"count"`
		}{in.Steps})
		if err != nil {
			return res, err
		}
		res.Content[0].Text = fmt.Sprintf("counted to %d", in.Steps)
		return res, nil
	}),
}

// long_job: must run as a task because it stops to ask the user.

type confirmation struct {
	Confirm bool `json:"confirm"`
}

type longJobResult struct {
	Steps     int  `json:"steps"`
	Done      int  `json:"done"`
	Confirmed bool `json:"confirmed"`
}

var longJob = guest.Tool{
	Name:  "long_job",
	Title: "Long job",
	Description: "Runs steps steps of delay_ms (default 100) each; halfway it asks the user to confirm, " +
		"then finishes, or stops when the user declines.",
	InputSchema: countSchema,
	OutputSchema: `{"type":"object","properties":{"steps":{"type":"integer"},"done":{"type":"integer"},"confirmed":{"type":"boolean"}},` +
		`"required":["steps","done","confirmed"]}`,
	Annotations: &abi.Annotations{ReadOnlyHint: ptr(true), OpenWorldHint: ptr(false)},
	TaskSupport: abi.TaskRequired,
	Grants:      &abi.Grants{TimeoutMs: 60 * 60 * 1000},
	Handler: guest.Handle(func(c *guest.Call, in countArgs) (guest.Result, error) {
		if in.DelayMs == 0 {
			in.DelayMs = 100
		}
		if err := in.check(); err != nil {
			return guest.Result{}, err
		}
		out := longJobResult{Steps: in.Steps}
		half := in.Steps / 2
		run := func(to int) {
			for ; out.Done < to; out.Done++ {
				sleep(time.Duration(in.DelayMs) * time.Millisecond)
				c.Progress(float64(out.Done+1), float64(in.Steps), fmt.Sprintf("step %d of %d", out.Done+1, in.Steps))
			}
		}
		c.Status("running the first half")
		run(half)

		c.Status("waiting for confirmation")
		var answer confirmation
		action, err := c.Elicit(
			fmt.Sprintf("Halfway there: %d of %d steps done. Continue?", out.Done, in.Steps),
			`{"type":"object","properties":{"confirm":{"type":"boolean","title":"Continue the job"}},"required":["confirm"]}`,
			&answer)
		if errors.Is(err, guest.ErrElicitUnsupported) {
			return guest.Result{}, fmt.Errorf("long_job stops halfway to ask the user to confirm, and nobody can answer in this call (%d of %d steps done)", out.Done, in.Steps)
		}
		if err != nil {
			return guest.Result{}, fmt.Errorf("long_job could not ask for confirmation: %w", err)
		}
		out.Confirmed = action == guest.Accept && answer.Confirm
		if out.Confirmed {
			c.Status("running the second half")
			run(in.Steps)
		} else {
			c.Logf(guest.LevelInfo, "stopped after %d of %d steps: the user answered %s", out.Done, in.Steps, action)
		}
		c.Status("")

		res, err := guest.Structured(out)
		if err != nil {
			return res, err
		}
		if out.Confirmed {
			res.Content[0].Text = fmt.Sprintf("finished all %d steps", in.Steps)
		} else {
			res.Content[0].Text = fmt.Sprintf("declined: stopped after %d of %d steps", out.Done, in.Steps)
		}
		return res, nil
	}),
}

// sleep waits d in steps of at most 20 ms: the host may not interrupt a
// sleep inside its clock, so short steps keep cancellation prompt.
func sleep(d time.Duration) {
	const step = 20 * time.Millisecond
	for d > 0 {
		s := min(d, step)
		time.Sleep(s)
		d -= s
	}
}
