// Command gostate is a Go tool that keeps state in the places a Go tool
// could carry one call's data into the next: package-level variables, a
// map filled by its handler, and encoding/json's caches (its argument type
// is warmed by the guest SDK, its result type by guest.Warm). Built
// pre-initialised, every call must still start from the state the
// initialisers left.
package main

import (
	"strings"

	"github.com/wasmtask/wasmtask/abi/guest"
)

type rememberArgs struct {
	Text string `json:"text"`
}

type rememberResult struct {
	Seen  []string       `json:"seen"`  // every text this instance was given
	Count map[string]int `json:"count"` // how often each was given
	Init  int            `json:"init"`  // how often the initialiser ran
}

var (
	seen  []string
	count = map[string]int{}
	inits int
	last  rememberResult // the last result, kept
)

func init() {
	inits++
	guest.Warm(rememberResult{Seen: []string{"warm"}, Count: map[string]int{"warm": 1}})
}

var remember = guest.Tool{
	Name:        "remember",
	Description: "Remembers texts and reports all it remembers.",
	Handler: guest.Handle(func(c *guest.Call, in rememberArgs) (guest.Result, error) {
		seen = append(seen, in.Text)
		count[in.Text]++
		last.Seen = append(last.Seen, in.Text)
		last = rememberResult{Seen: seen, Count: count, Init: inits}
		res, err := guest.Structured(last)
		if err != nil {
			return res, err
		}
		res.Content[0].Text = strings.Join(seen, ",")
		return res, nil
	}),
}

func main() { guest.Run(remember) }
