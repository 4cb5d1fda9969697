package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcperr"
	"github.com/wasmtask/wasmtask/host/internal/mcpevents"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/host/internal/roundstate"
)

// This file serves MCP's other primitives (ABI 1.2): resources, resource
// templates, prompts and completion, from the catalog, in both eras. The
// catalog routes and runs each request; this file decides who sees what,
// pages the lists and words the errors.

const (
	methodListResources  = "resources/list"
	methodListTemplates  = "resources/templates/list"
	methodReadResource   = "resources/read"
	methodListPrompts    = "prompts/list"
	methodGetPrompt      = "prompts/get"
	methodComplete       = "completion/complete"
	methodListen         = "subscriptions/listen"
	resourceNotFoundCode = abi.CodeResourceNotFound
)

// Kind is what a tenant may be shown (Config.Visible).
type Kind uint8

// Kinds of served declarations.
const (
	KindTool Kind = iota
	KindResource
	KindTemplate // named by its URI template
	KindPrompt
)

// Primitives is implemented by a [Catalog] whose modules serve resources,
// resource templates or prompts. A catalog without it serves none.
//
// Each method is told what the requestor may see: visible(name, module)
// with the URI, the URI template or the prompt name and the module
// serving it. A declaration it may not see is absent from its lists and
// unknown to its requests, exactly as one nobody serves, and is never run.
type Primitives interface {
	// Resources, ResourceTemplates and Prompts list what is served and
	// visible: resources by URI, templates in the order reads try them,
	// prompts by name. With a nil visible the slices are shared: do not
	// modify them.
	Resources(visible func(name, module string) bool) []abi.Resource
	ResourceTemplates(visible func(name, module string) bool) []abi.ResourceTemplate
	Prompts(visible func(name, module string) bool) []abi.Prompt
	// ReadResource reads uri (ErrUnknownResource when nothing visible
	// serves it); GetPrompt renders prompt name with args
	// (ErrUnknownPrompt), its questions asked through ev (nil: none may
	// be); Complete completes arg of ref, given the other
	// arguments (no values when nothing visible completes it). A failure
	// to run wraps a *[mcperr.Failure]. module is the module that served it.
	ReadResource(ctx context.Context, who Caller, uri string, visible func(name, module string) bool) (res *abi.ReadResult, module string, err error)
	GetPrompt(ctx context.Context, who Caller, name string, args map[string]string, ev abi.Events, visible func(name, module string) bool) (res *abi.PromptResult, module string, err error)
	Complete(ctx context.Context, who Caller, ref abi.CompleteRef, arg abi.CompleteArgument, given map[string]string, visible func(name, module string) bool) (*abi.CompleteResult, error)
	// Routes reports whether a visible resource or template serves uri
	// (nothing is run).
	Routes(uri string, visible func(name, module string) bool) bool
}

// Errors of a [Primitives] catalog.
var (
	// ErrUnknownResource: no visible resource or template serves the URI.
	ErrUnknownResource = errors.New("unknown resource")
	// ErrUnknownPrompt: no visible prompt has the name.
	ErrUnknownPrompt = errors.New("unknown prompt")
)

// listPage bounds the items of one page of resources/list,
// resources/templates/list and prompts/list; the rest follow by cursor.
const listPage = 256

// maxListenURIs bounds the resources one subscriptions/listen request
// (2026-07-28) subscribes to.
const maxListenURIs = 256

// primsOf is the catalog's primitives; a catalog without them serves
// none.
func primsOf(c Catalog) Primitives {
	p, _ := c.(Primitives)
	return p
}

// sees is what user may see of kind, as the catalog's visible argument;
// nil when everyone sees everything.
func (s *Server) sees(user string, kind Kind) func(name, module string) bool {
	if s.cfg.Visible == nil {
		return nil
	}
	return func(name, module string) bool { return s.cfg.Visible(user, kind, name, module) }
}

// private reports whether what user lists depends on who user is, for a
// list result's cacheScope.
func (s *Server) private(user string) bool { return s.cfg.Visible != nil && user != "" }

// page returns the page of items that cursor names and the cursor of the
// next, "" after the last. A cursor is the offset, opaque to the client;
// a reload between pages may shift the items (list_changed says so).
func page[T any](items []T, cursor string) ([]T, string, error) {
	off := 0
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		n, perr := strconv.Atoi(strings.TrimPrefix(string(b), "o"))
		if err != nil || perr != nil || !strings.HasPrefix(string(b), "o") || n < 0 || n > len(items) {
			return nil, "", mcperr.RPC(jsonrpc.CodeInvalidParams, "invalid cursor")
		}
		off = n
	}
	end := min(off+listPage, len(items))
	next := ""
	if end < len(items) {
		next = base64.RawURLEncoding.EncodeToString([]byte("o" + strconv.Itoa(end)))
	}
	return items[off:end], next, nil
}

// primitiveRequest answers a request of the primitives, in either era;
// handled is false for a method that is not one.
func (s *Server) primitiveRequest(ctx context.Context, rq requestor, method string, req mcp.Request) (res mcp.Result, handled bool, err error) {
	switch method {
	case methodListResources, methodListTemplates, methodReadResource, methodListPrompts, methodGetPrompt, methodComplete:
	default:
		return nil, false, nil
	}
	cat, release, err := s.cfg.Catalog(ctx, "")
	if err != nil {
		return nil, true, err
	}
	defer release()
	prims := primsOf(cat)
	scope := mcp.Cacheable{CacheScope: "public"}
	if s.private(rq.user) {
		scope.CacheScope = "private"
	}
	switch r := req.(type) {
	case *mcp.ListResourcesRequest:
		var all []abi.Resource
		if prims != nil {
			all = prims.Resources(s.sees(rq.user, KindResource))
		}
		items, next, err := page(all, cursor(r.Params))
		if err != nil {
			return nil, true, err
		}
		out := &mcp.ListResourcesResult{Cacheable: scope, NextCursor: next, Resources: make([]*mcp.Resource, len(items))}
		for i := range items {
			out.Resources[i] = mcpwire.Resource(&items[i])
		}
		return out, true, nil
	case *mcp.ListResourceTemplatesRequest:
		var all []abi.ResourceTemplate
		if prims != nil {
			all = prims.ResourceTemplates(s.sees(rq.user, KindTemplate))
		}
		items, next, err := page(all, cursor(r.Params))
		if err != nil {
			return nil, true, err
		}
		out := &mcp.ListResourceTemplatesResult{Cacheable: scope, NextCursor: next, ResourceTemplates: make([]*mcp.ResourceTemplate, len(items))}
		for i := range items {
			out.ResourceTemplates[i] = mcpwire.ResourceTemplate(&items[i])
		}
		return out, true, nil
	case *mcp.ListPromptsRequest:
		var all []abi.Prompt
		if prims != nil {
			all = prims.Prompts(s.sees(rq.user, KindPrompt))
		}
		items, next, err := page(all, cursor(r.Params))
		if err != nil {
			return nil, true, err
		}
		out := &mcp.ListPromptsResult{Cacheable: scope, NextCursor: next, Prompts: make([]*mcp.Prompt, len(items))}
		for i := range items {
			out.Prompts[i] = mcpwire.Prompt(&items[i])
		}
		return out, true, nil
	case *mcp.ReadResourceRequest:
		res, err := s.readResource(ctx, rq, prims, r.Params)
		if err != nil {
			return nil, true, err
		}
		res.CacheScope = scope.CacheScope
		return res, true, nil
	case *mcp.GetPromptRequest:
		res, err := s.getPrompt(ctx, rq, prims, r.Params)
		if err != nil {
			return nil, true, err
		}
		return res, true, nil
	case *mcp.CompleteRequest:
		res, err := s.complete(ctx, rq, prims, r.Params)
		return res, true, err
	}
	return nil, true, mcperr.RPC(jsonrpc.CodeInternalError, "internal error: unexpected %s request type %T", method, req)
}

// answerRead and answerPrompt serve resources/read and prompts/get when
// they are answered before go-sdk (ownanswers.go), through the handlers
// go-sdk's path calls.
func (s *Server) answerRead(ctx context.Context, rq requestor, p *mcp.ReadResourceParams) (mcp.Result, error) {
	res, _, err := s.primitiveRequest(ctx, rq, methodReadResource, &mcp.ReadResourceRequest{Params: p})
	return res, err
}

func (s *Server) answerPrompt(ctx context.Context, rq requestor, p *mcp.GetPromptParams) (mcp.Result, error) {
	res, _, err := s.primitiveRequest(ctx, rq, methodGetPrompt, &mcp.GetPromptRequest{Params: p})
	return res, err
}

// cursor is the cursor of a list request's params, "" when absent.
func cursor(p mcp.Params) string {
	switch p := p.(type) {
	case *mcp.ListResourcesParams:
		if p != nil {
			return p.Cursor
		}
	case *mcp.ListResourceTemplatesParams:
		if p != nil {
			return p.Cursor
		}
	case *mcp.ListPromptsParams:
		if p != nil {
			return p.Cursor
		}
	}
	return ""
}

func (s *Server) readResource(ctx context.Context, rq requestor, prims Primitives, p *mcp.ReadResourceParams) (*mcpwire.ReadResourceResult, error) {
	if p == nil || p.URI == "" {
		return nil, mcperr.RPC(jsonrpc.CodeInvalidParams, "resources/read: missing params.uri")
	}
	if prims == nil {
		return nil, errResourceNotFound(p.URI, rq.modern)
	}
	ctx, stop := withDone(ctx, rq.sess.ctx)
	defer stop()
	res, module, err := prims.ReadResource(ctx, Caller{Tenant: rq.owner(), User: rq.user}, p.URI, s.sees(rq.user, KindResource))
	s.audit(auditRead, rq.owner(), slog.String("uri", p.URI), slog.String("module", module), outcomeAttr(nil, err))
	switch {
	case errors.Is(err, ErrUnknownResource):
		return nil, errResourceNotFound(p.URI, rq.modern)
	case err != nil:
		return nil, primFailure(fmt.Sprintf("resource %q", p.URI), err)
	case res.Error != nil && res.Error.Code == abi.CodeResourceNotFound:
		// The module's "no such resource", in the era's words.
		e := errResourceNotFound(p.URI, rq.modern)
		e.Message = res.Error.Message
		return nil, e
	case res.Error != nil:
		return nil, guestError(res.Error)
	}
	out := &mcpwire.ReadResourceResult{Contents: make([]*mcp.ResourceContents, len(res.Contents))}
	if rq.modern {
		out.ResultType = resultComplete
	}
	for i := range res.Contents {
		out.Contents[i] = mcpwire.ResourceContents(&res.Contents[i])
	}
	return out, nil
}

func (s *Server) getPrompt(ctx context.Context, rq requestor, prims Primitives, p *mcp.GetPromptParams) (mcp.Result, error) {
	if p == nil || p.Name == "" {
		return nil, mcperr.RPC(jsonrpc.CodeInvalidParams, "prompts/get: missing params.name")
	}
	if prims == nil {
		return nil, errUnknownPrompt(p.Name)
	}
	if err := checkInputResponses(p.InputResponses); err != nil {
		return nil, err
	}
	ctx, stop := withDone(ctx, rq.sess.ctx)
	defer stop()
	// A 2026-07-28 prompt that asks runs in input rounds, as a call does;
	// a 2025-11-25 one asks on its request's stream.
	var ev abi.Events
	var r *mcpevents.Round
	var bind roundstate.Binding
	if rq.modern && rq.canAsk() {
		args, _ := json.Marshal(p.Arguments)
		bind = roundstate.Binding{Tenant: rq.owner(), Method: methodGetPrompt, Name: p.Name, Args: args}
		answers, err := s.roundAnswers(bind, p.RequestState, p.InputResponses)
		if err != nil {
			return nil, err
		}
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ctx = rctx
		r = mcpevents.NewRound(s.client(rq), p.Name, answers, mcpevents.NewCall(ctx, s.client(rq), nil, p.Name), cancel, nil)
		ev = r
	} else if !rq.modern {
		ev = mcpevents.NewCall(ctx, s.client(rq), nil, p.Name)
	}
	res, module, err := prims.GetPrompt(ctx, Caller{Tenant: rq.owner(), User: rq.user}, p.Name, p.Arguments, ev, s.sees(rq.user, KindPrompt))
	if r != nil {
		if res, err := s.roundOutcome(r, bind); res != nil || err != nil {
			s.audit(auditPrompt, rq.owner(), slog.String("prompt", p.Name), slog.String("module", module), slog.String("outcome", "input_required"))
			return res, err
		}
	}
	s.audit(auditPrompt, rq.owner(), slog.String("prompt", p.Name), slog.String("module", module), outcomeAttr(nil, err))
	var f *mcperr.Failure
	switch {
	case errors.Is(err, ErrUnknownPrompt):
		return nil, errUnknownPrompt(p.Name)
	case errors.As(err, &f) && f.Kind == mcperr.FailArguments:
		return nil, mcperr.RPC(jsonrpc.CodeInvalidParams, "prompts/get: invalid arguments for prompt %q: %s", p.Name, f.Detail)
	case err != nil:
		return nil, primFailure(fmt.Sprintf("prompt %q", p.Name), err)
	case res.Error != nil:
		return nil, guestError(res.Error)
	}
	out := &mcpwire.GetPromptResult{Description: res.Description, Messages: make([]*mcp.PromptMessage, len(res.Messages))}
	if rq.modern {
		out.ResultType = resultComplete
	}
	for i, m := range res.Messages {
		out.Messages[i] = &mcp.PromptMessage{Role: mcp.Role(m.Role), Content: mcpwire.PromptContent(&res.Messages[i].Content)}
	}
	return out, nil
}

func (s *Server) complete(ctx context.Context, rq requestor, prims Primitives, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if p == nil || p.Ref == nil {
		return nil, mcperr.RPC(jsonrpc.CodeInvalidParams, "completion/complete: missing params.ref")
	}
	if p.Argument.Name == "" {
		return nil, mcperr.RPC(jsonrpc.CodeInvalidParams, "completion/complete: missing params.argument.name")
	}
	ref := abi.CompleteRef{Type: p.Ref.Type, Name: p.Ref.Name, URI: p.Ref.URI}
	var kind Kind
	switch ref.Type {
	case abi.RefPrompt:
		kind = KindPrompt
	case abi.RefResource:
		kind = KindTemplate
	default:
		return nil, mcperr.RPC(jsonrpc.CodeInvalidParams, "completion/complete: params.ref.type must be %q or %q", abi.RefPrompt, abi.RefResource)
	}
	out := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	if prims == nil {
		return out, nil
	}
	var given map[string]string
	if p.Context != nil {
		given = p.Context.Arguments
	}
	ctx, stop := withDone(ctx, rq.sess.ctx)
	defer stop()
	res, err := prims.Complete(ctx, Caller{Tenant: rq.owner(), User: rq.user}, ref, abi.CompleteArgument{Name: p.Argument.Name, Value: p.Argument.Value}, given, s.sees(rq.user, kind))
	switch {
	case err != nil:
		return nil, primFailure(fmt.Sprintf("the completion of %q", p.Argument.Name), err)
	case res.Error != nil:
		return nil, guestError(res.Error)
	}
	out.Completion = mcp.CompletionResultDetails{Values: res.Values, Total: res.Total, HasMore: res.HasMore}
	if out.Completion.Values == nil {
		out.Completion.Values = []string{}
	}
	return out, nil
}

// subscribe is go-sdk's SubscribeHandler: a session may subscribe to a
// URI it can read, up to maxSubscriptions of them.
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	rq, err := requestorFrom(ctx)
	if err != nil {
		return err
	}
	if req.Params == nil || req.Params.URI == "" {
		return mcperr.RPC(jsonrpc.CodeInvalidParams, "resources/subscribe: missing params.uri")
	}
	uri := req.Params.URI
	if !s.served(ctx, rq.user, uri) {
		return errResourceNotFound(uri, false) // 2025-11-25 only: 2026-07-28 has no resources/subscribe
	}
	return s.subs.add(rq.sess.id, uri)
}

// unsubscribe is go-sdk's UnsubscribeHandler.
func (s *Server) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	rq, err := requestorFrom(ctx)
	if err != nil {
		return err
	}
	if req.Params != nil {
		s.subs.remove(rq.sess.id, req.Params.URI)
	}
	return nil
}

// served reports whether user can read uri: a visible resource or a
// visible template serves it (nothing is run).
func (s *Server) served(ctx context.Context, user, uri string) bool {
	cat, release, err := s.cfg.Catalog(ctx, "")
	if err != nil {
		return false
	}
	defer release()
	prims := primsOf(cat)
	return prims != nil && prims.Routes(uri, s.sees(user, KindResource))
}

// listen passes a 2026-07-28 subscriptions/listen request to go-sdk,
// which holds it open, after bounding its resource subscriptions, and
// records those for ResourcesUpdated while it is open.
func (s *Server) listen(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	r, ok := req.(*mcp.SubscriptionsListenRequest)
	if !ok || r.Params == nil || r.Params.Notifications == nil {
		return next(ctx, method, req)
	}
	uris := r.Params.Notifications.ResourceSubscriptions
	if len(uris) > maxListenURIs {
		return nil, mcperr.RPC(jsonrpc.CodeInvalidParams, "subscriptions/listen: more than %d resource subscriptions", maxListenURIs)
	}
	key := "listen:" + strconv.FormatUint(s.listens.Add(1), 10)
	for _, u := range uris {
		if err := s.subs.add(key, u); err != nil {
			s.subs.drop(key)
			return nil, err
		}
	}
	defer s.subs.drop(key)
	return next(ctx, method, req)
}

// ResourcesChanged tells connected clients that the resource list (and
// template list) changed (notifications/resources/list_changed), and
// PromptsChanged the prompt list. Call them after a catalog swap that
// changed what the lists render. Like ToolsChanged, each replaces a
// placeholder go-sdk never lists (our middleware answers the lists).
func (s *Server) ResourcesChanged() {
	s.mcp.AddResource(&mcp.Resource{URI: listChangedPlaceholderURI, Name: listChangedPlaceholder}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return nil, errors.New("unreachable: resources/read is answered by the middleware")
	})
}

// PromptsChanged: see ResourcesChanged.
func (s *Server) PromptsChanged() {
	s.mcp.AddPrompt(&mcp.Prompt{Name: listChangedPlaceholder}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return nil, errors.New("unreachable: prompts/get is answered by the middleware")
	})
}

const listChangedPlaceholderURI = "io.wasmtask:list-changed"

// ResourcesUpdated sends notifications/resources/updated for every URI
// some client subscribes to for which changed reports true (after a
// catalog swap: the URIs whose module changed).
func (s *Server) ResourcesUpdated(ctx context.Context, changed func(uri string) bool) {
	for _, uri := range s.subs.uris() {
		if changed(uri) {
			_ = s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
		}
	}
}

// errResourceNotFound is MCP's resource-not-found error for uri: -32002
// up to 2025-11-25, -32602 (invalid params) in 2026-07-28 (modern), which
// standardised on the JSON-RPC code (SEP-2164). Both carry the URI in
// data.
func errResourceNotFound(uri string, modern bool) *jsonrpc.Error {
	code := int64(resourceNotFoundCode)
	if modern {
		code = jsonrpc.CodeInvalidParams
	}
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return &jsonrpc.Error{Code: code, Message: fmt.Sprintf("resource not found: %q", uri), Data: data}
}

func errUnknownPrompt(name string) error {
	return mcperr.RPC(jsonrpc.CodeInvalidParams, "unknown prompt: %q", name)
}

// primFailure is the JSON-RPC error of a read, prompt or completion that
// ended without an answer (what: the subject of its text).
func primFailure(what string, err error) error {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return rpc
	}
	code := int64(jsonrpc.CodeInternalError)
	var f *mcperr.Failure
	if errors.As(err, &f) && f.Kind == mcperr.FailBusy {
		code = mcperr.CodeLimit
	}
	return mcperr.RPC(code, "%s", mcperr.FailureTextOf(what, err))
}

// guestError is the JSON-RPC error a module answered instead of a result
// (abi.ProtocolError: checked when decoded).
func guestError(e *abi.ProtocolError) error {
	return &jsonrpc.Error{Code: e.Code, Message: e.Message}
}
