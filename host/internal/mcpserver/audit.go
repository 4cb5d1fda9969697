package mcpserver

import (
	"context"
	"log/slog"

	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/host/internal/taskcodec"
	"github.com/wasmtask/wasmtask/taskengine"
)

// Audit actions: the first attribute of every audit line. One line is
// written per tenant action, with the tenant (the task owner), the tool,
// the module and its digest where the action names a tool, and the
// outcome. Argument values and results are never written.
const (
	auditSessionOpen = "session.open"
	auditCall        = "call"        // a plain tools/call ended
	auditTaskCreate  = "task.create" // outcome "created" or "refused"
	auditTaskFinish  = "task.finish"
	auditTaskCancel  = "task.cancel"
	auditTaskResult  = "task.result"
	auditDenied      = "request.denied"
	auditRead        = "resource.read" // a resources/read ended
	auditPrompt      = "prompt.get"    // a prompts/get ended
)

// audit writes one line of the audit log.
func (s *Server) audit(action, tenant string, attrs ...slog.Attr) {
	all := make([]slog.Attr, 0, 2+len(attrs))
	all = append(all, slog.String("action", action), slog.String("tenant", tenant))
	all = append(all, attrs...)
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "audit", all...)
}

// toolAttrs names tool and, when cat knows it, its module and digest.
func toolAttrs(cat Catalog, tool string) []slog.Attr {
	attrs := []slog.Attr{slog.String("tool", tool)}
	if info, ok := cat.Tool(tool); ok && info.Module != "" {
		attrs = append(attrs, slog.String("module", info.Module), slog.String("digest", info.Digest))
	}
	return attrs
}

// AuditDenied writes the audit line of an HTTP request that a check in
// front of MCP refused (authentication, rate, origin, host, caps): who
// asked, when known, and why.
func (s *Server) AuditDenied(method, path, tenant string, status int, reason string) {
	if s.cfg.OnDenied != nil {
		s.cfg.OnDenied(status)
	}
	s.audit(auditDenied, tenant, slog.String("method", method), slog.String("path", path),
		slog.Int("status", status), slog.String("reason", reason))
}

// outcomeAttr is how a call ended: "ok", "tool error" (isError), or the
// JSON-RPC error it was answered with.
func outcomeAttr(res *mcpwire.CallToolResult, err error) slog.Attr {
	switch {
	case err != nil:
		return slog.String("outcome", "error: "+err.Error())
	case res != nil && res.IsError:
		return slog.String("outcome", "tool error")
	}
	return slog.String("outcome", "ok")
}

// toolOf is the tool a task runs.
func toolOf(t taskengine.Task) string {
	info, _ := t.Meta.(*taskcodec.Meta)
	if info == nil {
		return ""
	}
	return info.Tool
}

// taskAttrs are the audit attributes of task t: its tool, module, digest
// and ID.
func taskAttrs(t taskengine.Task) []slog.Attr {
	var attrs []slog.Attr
	if info, _ := t.Meta.(*taskcodec.Meta); info != nil {
		attrs = append(attrs, info.Attrs...)
	}
	return append(attrs, slog.String("task", t.ID))
}
