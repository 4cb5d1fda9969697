package wasmtask_test

import (
	"os"
	"strings"
	"testing"
)

// TestREADMETestCommandIsCIs: the test command README.md gives a newcomer
// (the second of its two commands) is the one .ci/run runs, so that what a
// newcomer runs is what CI proves.
func TestREADMETestCommandIsCIs(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "## Two commands")
	if !ok {
		t.Fatal("README.md has no section Two commands")
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	block, _, ok2 := strings.Cut(rest, "```")
	lines := strings.Split(strings.TrimSpace(block), "\n")
	if !ok || !ok2 || len(lines) != 2 {
		t.Fatalf("README.md's Two commands: want one sh block of two lines, got %q", block)
	}
	command, _, _ := strings.Cut(lines[1], "#")
	command = strings.TrimSpace(command)
	run, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(run), "\n") {
		if strings.TrimSpace(line) == command {
			return
		}
	}
	t.Errorf(".ci/run does not run the README's test command %q on a line of its own", command)
}
