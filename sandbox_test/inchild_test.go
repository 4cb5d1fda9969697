package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// The memory benchmarks (BenchmarkPeakRSS, BenchmarkLoadPeak,
// BenchmarkOutputRSS) measure each case in a fresh process, so that no
// other case's memory is counted: the benchmark runs one of this
// package's tests (its child) with the case in measureEnv; the child
// finds its case with childCase, brackets what it measures with
// resetPeak and peakRSS, and prints the figures with report. Linux only
// (the peak is the kernel's VmHWM, reset through /proc/self/clear_refs).

// measureEnv names the child test and its case: "<test>/<case>/<engine>".
const measureEnv = "WASMTASK_MEASURE"

// needsProc skips b where the kernel cannot reset a process's peak.
func needsProc(b *testing.B) {
	if _, err := os.Stat("/proc/self/clear_refs"); err != nil {
		b.Skip("needs Linux /proc")
	}
}

// measureInChild runs the test child for case name on engine (may be "")
// in a fresh process and returns the fields it reported.
func measureInChild(b *testing.B, child, name, engine string) []string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), measureEnv+"="+child+"/"+name+"/"+engine)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("%s: %v\n%s", child, err, out)
	}
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "measured "); ok {
			return strings.Fields(rest)
		}
	}
	b.Fatalf("%s printed no measurement:\n%s", child, out)
	return nil
}

// childCase returns the case and engine the benchmark started this child
// test for; it skips the test when no benchmark did.
func childCase(t *testing.T) (name string, interpreter bool) {
	test, rest, _ := strings.Cut(os.Getenv(measureEnv), "/")
	if test != t.Name() {
		t.Skip("run by its benchmark, in a process of its own")
	}
	name, engine, _ := strings.Cut(rest, "/")
	return name, engine == "interpreter"
}

// resetPeak collects garbage, returns the process's resident memory and
// resets its peak, in bytes.
func resetPeak(t *testing.T) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	base := procStatus(t, "VmRSS")
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatal(err)
	}
	return base
}

// peakRSS returns the process's peak resident memory since resetPeak.
func peakRSS(t *testing.T) int64 { return procStatus(t, "VmHWM") }

// report prints a child's figures for measureInChild.
func report(fields ...any) {
	fmt.Println(append([]any{"measured"}, fields...)...)
}

// field returns fields[i] as an integer.
func field(b *testing.B, fields []string, i int) int64 {
	b.Helper()
	if i >= len(fields) {
		b.Fatalf("measurement %q has no field %d", fields, i)
	}
	v, err := strconv.ParseInt(fields[i], 10, 64)
	if err != nil {
		b.Fatalf("measurement %q: %v", fields, err)
	}
	return v
}

// procStatus returns a "kB" field of /proc/self/status, in bytes.
func procStatus(t *testing.T, name string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", name)
	return 0
}
