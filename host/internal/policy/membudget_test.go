package policy

import (
	"io/fs"
	"testing"
)

func TestMemoryBudgetDefault(t *testing.T) {
	probe := func(n uint64) func(fs.FS) (uint64, string) {
		return func(fs.FS) (uint64, string) { return n, "the test's machine" }
	}
	for _, tc := range []struct {
		name    string
		pol     *Policy
		machine uint64
		want    uint64
	}{
		{"set by the policy", &Policy{MemoryBudgetMiB: 100}, 8 << 30, 100 << 20},
		{"half the machine", nil, 8 << 30, 4 << 30},
		{"half the machine, policy unset", &Policy{}, 1 << 30, 512 << 20},
		{"machine unknown", nil, 0, fallbackMemoryBudget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, src := tc.pol.MemoryBudget(probe(tc.machine))
			if got != tc.want || src == "" {
				t.Errorf("MemoryBudget = %d (%q), want %d", got, src, tc.want)
			}
		})
	}
}
