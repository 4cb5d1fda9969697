package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wasmtask/wasmtask/host"
)

// rssTasks is the number of tasks held running in figure 6.
const rssTasks = 1000

// memory is what /proc/PID/status says of a process, in KiB.
type memory struct{ rss, hwm int64 }

func readMemory(pid int) (memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	defer f.Close()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			m.rss = n
		case "VmHWM":
			m.hwm = n
		}
	}
	return m, sc.Err()
}

// serverProc is a server process of figure 6.
type serverProc struct {
	cmd  *exec.Cmd
	url  string              // MCP endpoint
	busy func() (int, error) // tool calls running now
}

func (p *serverProc) stop() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// start runs cmd with its output to the log and a parent-death signal, so
// that a crash of this program leaves no server behind.
func start(cmd *exec.Cmd, log io.Writer) error {
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd.Start()
}

// waitFor polls cond until it holds or limit passes.
func waitFor(what string, limit time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %v for %s (last error: %v)", limit, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func getText(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), err
}

// startWasmtask runs `wasmtask serve --http` on a directory holding
// benchtool.wasm, with a policy that lets rssTasks sleep calls run at once
// in 1 MiB instances.
func startWasmtask(bin, plugins, tmp string, log io.Writer) (*serverProc, error) {
	tool, err := readPlugin(plugins, "benchtool.wasm")
	if err != nil {
		return nil, err
	}
	tools := filepath.Join(tmp, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tools, "benchtool.wasm"), tool, 0o644); err != nil {
		return nil, err
	}
	sleep := host.ToolPolicy{MemoryMiB: 1, Timeout: host.Duration(15 * time.Minute), MaxOutputBytes: 4096, MaxLogBytes: 4096, MaxConcurrency: rssTasks}
	pol, _ := json.Marshal(host.Policy{
		MaxInstances:    rssTasks + 24,
		MemoryBudgetMiB: 4096,
		Modules:         map[string]host.ModulePolicy{"benchtool": {MaxInstances: rssTasks + 24, Tools: map[string]host.ToolPolicy{"sleep": sleep}}},
	})
	policy := filepath.Join(tmp, "policy.json")
	if err := os.WriteFile(policy, pol, 0o644); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	maddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cache := filepath.Join(tmp, "cache")
	cmd := exec.Command(bin, "serve", "--http", addr, "--metrics", maddr, "--tools", tools, "--policy", policy,
		"--cache-dir", cache, "--max-tasks-per-client", strconv.Itoa(rssTasks))
	if err := start(cmd, log); err != nil {
		return nil, err
	}
	p := &serverProc{cmd: cmd, url: "http://" + addr + host.HTTPPath}
	p.busy = func() (int, error) {
		text, err := getText("http://" + maddr + "/metrics")
		if err != nil {
			return 0, err
		}
		for line := range strings.Lines(text) {
			if v, ok := strings.CutPrefix(line, "wasmtask_instances_running "); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				return int(f), err
			}
		}
		return 0, fmt.Errorf("no wasmtask_instances_running in the metrics")
	}
	err = waitFor("wasmtask to be ready", time.Minute, func() (bool, error) {
		_, err := getText("http://" + addr + host.ReadyPath)
		return err == nil, err
	})
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// startMcpgo runs this program's peer-mcpgo mode: mcp-go's server in a
// process of its own.
func startMcpgo(log io.Writer) (*serverProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "peer-mcpgo", "-addr", addr)
	if err := start(cmd, log); err != nil {
		return nil, err
	}
	p := &serverProc{cmd: cmd, url: "http://" + addr + "/mcp"}
	p.busy = func() (int, error) {
		text, err := getText("http://" + addr + "/running")
		if err != nil {
			return 0, err
		}
		return strconv.Atoi(strings.TrimSpace(text))
	}
	if err := waitFor("mcp-go to be ready", time.Minute, func() (bool, error) {
		_, err := p.busy()
		return err == nil, err
	}); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// peerMcpgo is the peer-mcpgo mode: serve mcpgoServer at /mcp and the
// number of running sleep handlers at /running, until killed.
func peerMcpgo(args []string) error {
	fs := flag.NewFlagSet("peer-mcpgo", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen `ADDR`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var running atomic.Int64
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpgoServer(func(d int) { running.Add(int64(d)) }))
	mux.HandleFunc("GET /running", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, running.Load())
	})
	hs := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return hs.ListenAndServe()
}

// holdTasks starts rssTasks sleep tasks on p from 4 sessions and waits
// until all of them run; it returns the process's memory then.
func holdTasks(p *serverProc) (memory, error) {
	hc := httpClient()
	defer hc.CloseIdleConnections()
	const sessions = 4
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for range sessions {
		wg.Go(func() {
			s, err := newSession(hc, p.url)
			if err != nil {
				errs <- err
				return
			}
			for range rssTasks / sessions {
				if _, err := s.startTask("sleep", map[string]any{"ms": 600_000}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return memory{}, err
	}
	if err := waitFor(fmt.Sprintf("%d running tasks", rssTasks), 2*time.Minute, func() (bool, error) {
		n, err := p.busy()
		return n >= rssTasks, err
	}); err != nil {
		return memory{}, err
	}
	return readMemory(p.cmd.Process.Pid)
}

// figRSS is figure 6: the memory of a server process holding rssTasks
// running tasks, wasmtask (C tool instances sleeping in WASI poll_oneoff)
// against mcp-go (Go handlers sleeping).
func figRSS(plugins, bin string) ([]result, error) {
	tmp, err := os.MkdirTemp("", "wasmbench-rss-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	type usage struct{ idle, loaded memory }
	// run starts a server, reads its memory idle and with the tasks
	// running, and stops it; a failure carries the tail of its log.
	run := func(startProc func(log io.Writer) (*serverProc, error)) (usage, error) {
		var log bytes.Buffer // written by exec's copying goroutine until Wait
		withLog := func(err error) error {
			tail := log.Bytes()
			tail = tail[max(0, len(tail)-2048):]
			return fmt.Errorf("%w\nserver log (tail):\n%s", err, tail)
		}
		p, err := startProc(&log)
		if err != nil {
			return usage{}, withLog(err) // startProc stopped what it started
		}
		var u usage
		u.idle, err = readMemory(p.cmd.Process.Pid)
		if err == nil {
			u.loaded, err = holdTasks(p)
		}
		p.stop()
		if err != nil {
			return usage{}, withLog(err)
		}
		return u, nil
	}
	w, err := run(func(log io.Writer) (*serverProc, error) { return startWasmtask(bin, plugins, tmp, log) })
	if err != nil {
		return nil, fmt.Errorf("wasmtask: %w", err)
	}
	m, err := run(startMcpgo)
	if err != nil {
		return nil, fmt.Errorf("mcp-go: %w", err)
	}
	mib := func(kib int64) float64 { return float64(kib) / 1024 }
	perTask := func(x usage) float64 { return float64(x.loaded.rss-x.idle.rss) / rssTasks }
	return []result{
		{figure: "6", label: fmt.Sprintf("RSS with %d running tasks vs mcp-go (VmRSS)", rssTasks), refName: "mcp-go",
			wasmtask: mib(w.loaded.rss), reference: mib(m.loaded.rss), unit: "MiB", goal: "wasmtask ≤ 128 MiB"},
		{figure: "6", label: fmt.Sprintf("peak RSS with %d running tasks vs mcp-go (VmHWM)", rssTasks), refName: "mcp-go",
			wasmtask: mib(w.loaded.hwm), reference: mib(m.loaded.hwm), unit: "MiB"},
		{figure: "6", label: "RSS added per running task vs mcp-go", refName: "mcp-go",
			wasmtask: perTask(w), reference: perTask(m), unit: "KiB"},
		{figure: "6", label: "idle RSS before the tasks vs mcp-go", refName: "mcp-go",
			wasmtask: mib(w.idle.rss), reference: mib(m.idle.rss), unit: "MiB"},
	}, nil
}
