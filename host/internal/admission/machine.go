package admission

import (
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// maxProcFileBytes bounds what is read of one /proc or /sys file.
const maxProcFileBytes = 64 << 10

// MachineMemory returns the memory this process may use, read from root
// (the file system root): the smallest memory limit of its cgroup and the
// cgroups above it (cgroup v2 memory.max, v1 memory.limit_in_bytes), and
// MemTotal of /proc/meminfo. It returns 0 and the reason when none can be
// read. The cgroup files are looked up at the process's cgroup path and at
// the mount's root, which is the process's cgroup in a container with its
// own cgroup namespace.
func MachineMemory(root fs.FS) (uint64, string) {
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
