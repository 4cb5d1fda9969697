package policy

import (
	"fmt"
	"io/fs"
	"os"
)

// The default memory budget (Policy.MemoryBudgetMiB unset) is
// 1/budgetDivisor of the memory this process may use; the rest is for the
// server itself: compiled code, task results, buffers, the Go runtime.
const budgetDivisor = 2

// fallbackMemoryBudget is the default budget where the machine's memory
// cannot be read (not Linux, no /proc).
const fallbackMemoryBudget = 4 << 30

// snapshotDivisor: the snapshots of pre-initialised modules may hold
// 1/snapshotDivisor of the memory budget together, out of the memory the
// budget leaves to the server itself.
const snapshotDivisor = 4

// SnapshotBudgetMiB is the snapshot budget that goes with a memory budget
// of budget bytes: at least 1 MiB.
func SnapshotBudgetMiB(budget uint64) int {
	return int(max(budget/snapshotDivisor>>20, 1))
}

// MemoryBudget returns the memory budget in bytes and where it comes
// from, for the operator; probe finds the machine's memory
// (admission.MachineMemory, or a fake in tests).
func (p *Policy) MemoryBudget(probe func(fs.FS) (uint64, string)) (uint64, string) {
	if p != nil && p.MemoryBudgetMiB > 0 {
		return uint64(p.MemoryBudgetMiB) << 20, "the policy's memoryBudgetMiB"
	}
	n, src := probe(os.DirFS("/"))
	if n == 0 {
		return fallbackMemoryBudget, fmt.Sprintf("the fallback (%s)", src)
	}
	return n / budgetDivisor, fmt.Sprintf("1/%d of %s (%d MiB)", budgetDivisor, src, n>>20)
}
