package wasmrt

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
)

// askEvents are events that can ask the client (abi.Asker), recording
// what the guest sent.
type askEvents struct {
	events
	sampled []string
	fail    error
}

func (e *askEvents) Sample(_ context.Context, _ string, req json.RawMessage) (json.RawMessage, error) {
	e.sampled = append(e.sampled, string(req))
	if e.fail != nil {
		return nil, e.fail
	}
	return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"4"},"model":"m"}`), nil
}

func (e *askEvents) Roots(context.Context, string) (json.RawMessage, error) {
	if e.fail != nil {
		return nil, e.fail
	}
	return json.RawMessage(`{"roots":[{"uri":"file:///w"}]}`), nil
}

// The sample and roots imports reach the call's events and hand the
// guest the client's result; events that cannot ask, or refuse, give the
// guest a negative code; each counts against the call's questions.
func TestSampleAndRootsImports(t *testing.T) {
	r := newRuntime(t, Config{})
	m := load(t, r, "asks")
	if !m.Reach().Elicit {
		t.Error("a module importing sample does not count as one that may ask the client")
	}
	call := func(tool string, ev abi.Events) string {
		t.Helper()
		res, err := m.Call(context.Background(), tool, json.RawMessage(`{}`), testLimits, ev)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if len(res.StructuredContent) > 0 {
			return string(res.StructuredContent)
		}
		return res.Content[0].Text
	}
	ev := &askEvents{}
	if got := call("sample", ev); got != `{"role":"assistant","content":{"type":"text","text":"4"},"model":"m"}` {
		t.Errorf("sample answered %s", got)
	}
	if len(ev.sampled) != 1 || ev.sampled[0] != `{"messages":[{"role":"user","content":{"type":"text","text":"2+2?"}}],"maxTokens":5}` {
		t.Errorf("sample sent %q", ev.sampled)
	}
	if got := call("roots", ev); got != `{"roots":[{"uri":"file:///w"}]}` {
		t.Errorf("roots answered %s", got)
	}
	if got := call("sample", &events{}); got != "refused" {
		t.Errorf("sample with events that cannot ask: %s, want refused", got)
	}
	if got := call("roots", &askEvents{fail: fmt.Errorf("test: %w", abi.ErrElicitLimit)}); got != "refused" {
		t.Errorf("roots refused by a limit: %s, want refused", got)
	}
}

// A sample request's "key" names the question and is not sent.
func TestTakeKey(t *testing.T) {
	key, params, ok := takeKey([]byte(`{"key":"capital","maxTokens":5}`))
	if !ok || key != "capital" || string(params) != `{"maxTokens":5}` {
		t.Errorf("takeKey = %q, %s, %v; want capital and the params without it", key, params, ok)
	}
	if key, params, ok := takeKey([]byte(`{"maxTokens":5}`)); !ok || key != "" || string(params) != `{"maxTokens":5}` {
		t.Errorf("takeKey without a key = %q, %s, %v", key, params, ok)
	}
	for _, bad := range []string{`{"key":"has space"}`, `{"key":7}`, `{"key":""}`, `[1]`} {
		if _, _, ok := takeKey([]byte(bad)); ok {
			t.Errorf("takeKey(%s) accepted it", bad)
		}
	}
}

// elicit_all takes sampling and roots questions beside elicitations: each
// reaches the events its kind asks, with its key, and the reply is their
// answers in order; a question nobody can answer is null (cancel for an
// elicitation) while the others are answered.
func TestElicitAllMixedQuestions(t *testing.T) {
	r := newRuntime(t, Config{})
	m := load(t, r, "asks")
	var keys []string
	var mu sync.Mutex // the questions are asked concurrently
	ev := &keyedAsk{askEvents: askEvents{events: events{elicit: func(_ context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
		mu.Lock()
		keys = append(keys, "elicit:"+req.Key)
		mu.Unlock()
		return abi.ElicitReply{Action: "accept", Content: json.RawMessage(`{"name":"Ada"}`)}, nil
	}}}, mu: &mu, keys: &keys}
	res, err := m.Call(context.Background(), "all", json.RawMessage(`{}`), testLimits, ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"r":[{"action":"accept","content":{"name":"Ada"}},{"role":"assistant","content":{"type":"text","text":"4"},"model":"m"},{"roots":[{"uri":"file:///w"}]}]}`
	if got := string(res.StructuredContent); got != want {
		t.Errorf("replies = %s, want %s", got, want)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"elicit:who", "roots:", "sample:model"}) {
		t.Errorf("questions asked with keys %q", keys)
	}
	// Events that can elicit but not sample or roots: those two are null.
	res, err = m.Call(context.Background(), "all", json.RawMessage(`{}`), testLimits, &events{elicit: ev.elicit})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.StructuredContent); got != `{"r":[{"action":"accept","content":{"name":"Ada"}},null,null]}` {
		t.Errorf("replies without an asker = %s", got)
	}
}

// keyedAsk records the keys of the sampling and roots questions it gets.
type keyedAsk struct {
	askEvents
	mu   *sync.Mutex
	keys *[]string
}

func (e *keyedAsk) Sample(ctx context.Context, key string, req json.RawMessage) (json.RawMessage, error) {
	e.mu.Lock()
	*e.keys = append(*e.keys, "sample:"+key)
	e.mu.Unlock()
	return e.askEvents.Sample(ctx, key, req)
}

func (e *keyedAsk) Roots(ctx context.Context, key string) (json.RawMessage, error) {
	e.mu.Lock()
	*e.keys = append(*e.keys, "roots:"+key)
	e.mu.Unlock()
	return e.askEvents.Roots(ctx, key)
}
