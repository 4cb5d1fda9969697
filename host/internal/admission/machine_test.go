package admission

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestMachineMemory: the smallest cgroup limit up the process's cgroup
// path, else the physical memory, else 0 and why.
func TestMachineMemory(t *testing.T) {
	const gib = 1 << 30
	meminfo := "MemTotal:       16777216 kB\nMemFree:         1000 kB\n"
	for _, tc := range []struct {
		name    string
		files   map[string]string
		want    uint64
		wantSrc string
	}{
		{"nothing readable", nil, 0, "no cgroup memory limit"},
		{"physical memory only", map[string]string{"proc/meminfo": meminfo}, 16 * gib, "physical memory"},
		{"cgroup v2 in its own namespace", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "1073741824\n",
		}, gib, "cgroup"},
		{"cgroup v2 without a limit", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "max\n",
		}, 16 * gib, "physical memory"},
		{"cgroup v2, limit on a parent", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/a/b\n",
			"sys/fs/cgroup/a/b/memory.max": "max\n", "sys/fs/cgroup/a/memory.max": "536870912\n",
		}, gib / 2, "cgroup"},
		{"cgroup v1, no limit", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "5:devices:/\n4:memory:/x\n",
			"sys/fs/cgroup/memory/x/memory.limit_in_bytes": "9223372036854771712\n",
		}, 16 * gib, "physical memory"},
		{"cgroup v1 limit", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "4:cpuacct,memory:/x\n",
			"sys/fs/cgroup/memory/x/memory.limit_in_bytes": "2147483648\n",
		}, 2 * gib, "cgroup"},
		{"garbage", map[string]string{
			"proc/meminfo": "MemTotal: lots\n", "proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "-1\n",
		}, 0, "no cgroup memory limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, content := range tc.files {
				fsys[name] = &fstest.MapFile{Data: []byte(content)}
			}
			got, src := MachineMemory(fsys)
			if got != tc.want || !strings.Contains(src, tc.wantSrc) {
				t.Errorf("MachineMemory = %d (%s), want %d (%s)", got, src, tc.want, tc.wantSrc)
			}
		})
	}
}
