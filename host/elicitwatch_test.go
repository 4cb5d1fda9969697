package host

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
)

// watchedEvents ask nothing of a client; with asker they answer sampling
// and roots.
type watchedEvents struct{}

func (watchedEvents) Progress(float64, float64, string) {}
func (watchedEvents) Status(string)                     {}
func (watchedEvents) Log(int32, string)                 {}
func (watchedEvents) Elicit(context.Context, abi.ElicitRequest) (abi.ElicitReply, error) {
	return abi.ElicitReply{}, errors.ErrUnsupported
}

type watchedAsker struct{ watchedEvents }

func (watchedAsker) Sample(_ context.Context, key string, _ json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`"sampled ` + key + `"`), nil
}
func (watchedAsker) Roots(context.Context, string) (json.RawMessage, error) {
	return json.RawMessage(`"roots"`), nil
}

// The cache's watch passes sampling and roots on to the call's events and
// marks the result as one that depends on the client, as elicitation does.
func TestElicitWatchPassesAsksOn(t *testing.T) {
	ctx := context.Background()
	w := &elicitWatch{Events: watchedAsker{}}
	if got, err := w.Sample(ctx, "k", nil); err != nil || string(got) != `"sampled k"` || !w.elicited.Load() {
		t.Errorf("Sample = %s, %v (elicited %v), want the events' answer, and the result uncacheable", got, err, w.elicited.Load())
	}
	w = &elicitWatch{Events: watchedAsker{}}
	if got, err := w.Roots(ctx, ""); err != nil || string(got) != `"roots"` || !w.elicited.Load() {
		t.Errorf("Roots = %s, %v (elicited %v)", got, err, w.elicited.Load())
	}
	w = &elicitWatch{Events: watchedEvents{}}
	if _, err := w.Sample(ctx, "", nil); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Sample through events that cannot ask: %v, want ErrUnsupported", err)
	}
}
