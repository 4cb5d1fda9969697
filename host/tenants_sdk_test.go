package host

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tokenTransport presents a bearer token on every request.
type tokenTransport struct{ token string }

func (t tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestTenantsWithGoSDKClients: go-sdk's own client, presenting a tenant's
// token, connects, lists the tools its tenant sees and calls one; with a
// token of no tenant it cannot connect.
func TestTenantsWithGoSDKClients(t *testing.T) {
	doc := fmt.Sprintf(`{"tenants":{"alice":{"tokens":[%q],"tools":["add"]},"bob":{"tokens":[%q]}}}`, HashToken("alice-token"), HashToken("bob-token"))
	_, srv := tenantHTTP(t, doc, Config{ToolsFS: fstest.MapFS{"add.wasm": {Data: addModule(t)}, "m.wasm": {Data: verModule(t, "ver", "v1")}}})
	ctx := context.Background()
	connect := func(token string) (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "sdk-test", Version: "1"}, nil)
		return c.Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint:   srv.URL + HTTPPath,
			HTTPClient: &http.Client{Transport: tokenTransport{token}},
			MaxRetries: -1,
		}, nil)
	}
	for _, tc := range []struct {
		token string
		want  []string
	}{{"alice-token", []string{"add"}}, {"bob-token", []string{"add", "ver"}}} {
		cs, err := connect(tc.token)
		if err != nil {
			t.Fatalf("%s: connect: %v", tc.token, err)
		}
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range lt.Tools {
			names = append(names, tl.Name)
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("%s: tools %v, want %v", tc.token, names, tc.want)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}})
		if err != nil || res.IsError {
			t.Errorf("%s: add: %+v, %v", tc.token, res, err)
		}
		cs.Close()
	}
	if cs, err := connect("stolen"); err == nil {
		cs.Close()
		t.Error("a token of no tenant connected")
	}
}
