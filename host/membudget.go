package host

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
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

// snapshotBudgetMiB is the snapshot budget that goes with a memory budget
// of budget bytes: at least 1 MiB.
func snapshotBudgetMiB(budget uint64) int {
	return int(max(budget/snapshotDivisor>>20, 1))
}

// memoryBudget returns the budget in bytes and where it comes from; probe
// finds the machine's memory (machineMemory, or a fake in tests).
func (p *Policy) memoryBudget(probe func(fs.FS) (uint64, string)) (uint64, string) {
	if p != nil && p.MemoryBudgetMiB > 0 {
		return uint64(p.MemoryBudgetMiB) << 20, "the policy's memoryBudgetMiB"
	}
	n, src := probe(os.DirFS("/"))
	if n == 0 {
		return fallbackMemoryBudget, fmt.Sprintf("the fallback (%s)", src)
	}
	return n / budgetDivisor, fmt.Sprintf("1/%d of %s (%d MiB)", budgetDivisor, src, n>>20)
}

// maxProcFileBytes bounds what is read of one /proc or /sys file.
const maxProcFileBytes = 64 << 10

// machineMemory returns the memory this process may use, read from root
// (the file system root): the smallest memory limit of its cgroup and the
// cgroups above it (cgroup v2 memory.max, v1 memory.limit_in_bytes), and
// MemTotal of /proc/meminfo. It returns 0 and the reason when none can be
// read. The cgroup files are looked up at the process's cgroup path and at
// the mount's root, which is the process's cgroup in a container with its
// own cgroup namespace.
func machineMemory(root fs.FS) (uint64, string) {
	var best uint64
	src := "no cgroup memory limit or /proc/meminfo readable"
	if n, ok := memTotal(root); ok {
		best, src = n, "physical memory"
	}
	for _, lim := range cgroupLimitFiles(root) {
		if n, ok := readLimit(root, lim); ok && (best == 0 || n < best) {
			best, src = n, "the cgroup memory limit"
		}
	}
	return best, src
}

// memTotal reads MemTotal from /proc/meminfo.
func memTotal(root fs.FS) (uint64, bool) {
	b, err := readSmall(root, "proc/meminfo")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || kb == 0 || kb > 1<<44 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// cgroupLimitFiles lists the memory limit files that may bound this
// process, from /proc/self/cgroup: for each memory hierarchy (v2, and v1's
// memory controller) the file of its cgroup and of every cgroup above it.
func cgroupLimitFiles(root fs.FS) []string {
	b, err := readSmall(root, "proc/self/cgroup")
	if err != nil {
		return nil
	}
	var files []string
	for line := range strings.Lines(string(b)) {
		// hierarchy-ID:controller-list:cgroup-path
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
			continue
		}
		var dir, file string
		switch {
		case f[0] == "0" && f[1] == "":
			dir, file = "sys/fs/cgroup", "memory.max"
		case containsWord(f[1], "memory"):
			dir, file = "sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		for p := path.Clean(f[2]); ; p = path.Dir(p) {
			files = append(files, path.Join(dir, p, file))
			if p == "/" {
				break
			}
		}
	}
	return files
}

func containsWord(list, w string) bool {
	for x := range strings.SplitSeq(list, ",") {
		if x == w {
			return true
		}
	}
	return false
}

// readLimit reads a cgroup memory limit file: a byte count, or "max" (no
// limit, reported as not ok).
func readLimit(root fs.FS, name string) (uint64, bool) {
	b, err := readSmall(root, name)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n == 0 {
		return 0, false
	}
	return n, true
}

// readSmall reads at most maxProcFileBytes of a file.
func readSmall(root fs.FS, name string) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxProcFileBytes))
}
