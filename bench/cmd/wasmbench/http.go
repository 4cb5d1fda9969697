package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/host"
)

// clientCounts are the concurrent client sessions of the HTTP figures.
var clientCounts = []int{1, 8, 32}

// serveWasmtask serves an in-process wasmtask server on a loopback
// listener and returns its MCP endpoint.
func serveWasmtask(ctx context.Context, modules map[string][]byte, policy *host.Policy) (string, func(), error) {
	s, err := newServer(ctx, modules, policy)
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.Close()
		return "", nil, err
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	return "http://" + l.Addr().String() + host.HTTPPath, func() { s.Close(); <-done }, nil
}

// serveHandler serves h on a loopback listener, as wasmtask's Serve does.
func serveHandler(h http.Handler) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(l) }()
	return "http://" + l.Addr().String() + "/mcp", func() { hs.Close(); <-done }, nil
}

// mcpgoServer is mcp-go's server with its native tasks: the tool noop
// (answers "ok") and sleep (blocks for its ms argument), both
// taskSupport optional, with Go handlers.
//
// mcp-go runs a task's handler under the tools/call request's context,
// which ends as soon as the CreateTaskResult is written: a handler that
// honoured its context would be cancelled before it did its work. So these
// handlers ignore it, as any working mcp-go task handler must; mcp-go's
// figures therefore include no cancellation at all, where wasmtask's
// include a guest that tasks/cancel can stop.
func mcpgoServer(running func(delta int)) http.Handler {
	s := mcpgoserver.NewMCPServer("mcp-go", "bench",
		mcpgoserver.WithToolCapabilities(false),
		mcpgoserver.WithTaskCapabilities(true, true, true))
	s.AddTool(mcpgo.NewTool("noop", mcpgo.WithTaskSupport(mcpgo.TaskSupportOptional)),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("ok"), nil
		})
	s.AddTool(mcpgo.NewTool("sleep", mcpgo.WithTaskSupport(mcpgo.TaskSupportOptional), mcpgo.WithNumber("ms")),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			running(1)
			defer running(-1)
			time.Sleep(time.Duration(req.GetFloat("ms", 0)) * time.Millisecond)
			return mcpgo.NewToolResultText("ok"), nil
		})
	return mcpgoserver.NewStreamableHTTPServer(s)
}

// gosdkServer is a bare go-sdk server: one tool, noop, a Go handler.
func gosdkServer() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "go-sdk", Version: "bench"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "noop", Description: "Answers ok."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

func httpClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxIdleConns: 256}}
}

// sessionsSide opens n sessions on url and returns a side whose client i
// runs op on session i.
func sessionsSide(name, url string, n int, op func(*session) error, closers *[]func()) (side, error) {
	hc := httpClient()
	ss := make([]*session, n)
	for i := range ss {
		s, err := newSession(hc, url)
		if err != nil {
			return side{}, fmt.Errorf("%s: %w", name, err)
		}
		ss[i] = s
		*closers = append(*closers, s.close)
	}
	*closers = append(*closers, hc.CloseIdleConnections)
	return side{name: name, clients: n, op: func(i int) error { return op(ss[i]) }}, nil
}

// figHTTP builds figures 4 and 5: for each client count, a wasmtask side
// and a peer side over the same client.
func figHTTP(ctx context.Context, plugins, fig string) ([]side, []row, func(), error) {
	tool, err := readPlugin(plugins, "benchtool.wasm")
	if err != nil {
		return nil, nil, nil, err
	}
	var closers []func()
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	wurl, wclose, err := serveWasmtask(ctx, map[string][]byte{"benchtool": tool}, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	closers = append(closers, wclose)
	var (
		peer, label, goal string
		op                func(*session) error
		h                 http.Handler
	)
	switch fig {
	case "4":
		peer, label, goal, h = "mcp-go", "task round trip over HTTP vs mcp-go native tasks", "≤ 1.00", mcpgoServer(func(int) {})
		op = func(s *session) error { return s.taskRoundTrip("noop") }
	case "5":
		peer, label, goal, h = "go-sdk", "plain tools/call over HTTP vs bare go-sdk", "≤ 1.11", gosdkServer()
		op = func(s *session) error { return s.plainCall("noop") }
	default:
		return nil, nil, nil, errors.New("no such HTTP figure " + fig)
	}
	purl, pclose, err := serveHandler(h)
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	closers = append(closers, pclose)
	var sides []side
	var rows []row
	for _, n := range clientCounts {
		w, err := sessionsSide(fmt.Sprintf("wasmtask-%d", n), wurl, n, op, &closers)
		if err != nil {
			cleanup()
			return nil, nil, nil, err
		}
		p, err := sessionsSide(fmt.Sprintf("%s-%d", peer, n), purl, n, op, &closers)
		if err != nil {
			cleanup()
			return nil, nil, nil, err
		}
		sides = append(sides, w, p)
		rows = append(rows, row{fig, fmt.Sprintf("%s, %d client%s", label, n, plural(n)), w.name, p.name, goal})
	}
	return sides, rows, cleanup, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
