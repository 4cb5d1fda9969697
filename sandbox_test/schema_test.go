package sandbox_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
)

// TestHostileSchemas: modules of a few hundred bytes whose schemas would
// make the validator recurse forever, dereference nil or cost 2^depth are
// load problems that name the module and the cause; the server serves the
// others.
func TestHostileSchemas(t *testing.T) {
	cases := []struct {
		module string
		want   string
	}{
		{"schema_cycle", `tool "bad": inputSchema: reference cycle: # -allOf-> #/allOf/0 -$ref-> #`},
		{"schema_defs", `tool "bad": outputSchema: reference cycle: #/$defs/a -anyOf-> #/$defs/a/anyOf/0 -$ref-> #/$defs/b -not-> #/$defs/b/not -$ref-> #/$defs/a`},
		{"schema_anchor", "inputSchema: reference cycle: # -oneOf-> #/oneOf/0 -if-> #/oneOf/0/if -$ref-> #"},
		{"schema_pointer", "inputSchema: reference cycle: #/properties/a -$ref-> #/properties/b -dependentSchemas-> #/properties/b/dependentSchemas/x -$ref-> #/properties/a"},
		{"schema_case", `inputSchema: #: "ALLOF" must be spelled "allOf"`},
		{"schema_nilref", `inputSchema: #: $ref "#/additionalProperties": JSON Pointer "/additionalProperties" does not lead to a subschema`},
		{"schema_fanout", "inputSchema: too costly: validating one value nested"},
		{"schema_deep", "inputSchema: nested deeper than 64 levels"},
		{"schema_regex", "the schema's regular expressions compile to more than 20000 instructions"},
	}
	onEngines(t, func(t *testing.T, e engine) {
		modules := []string{"normal"}
		for _, tc := range cases {
			modules = append(modules, tc.module)
			wasm(t, tc.module)
		}
		wasm(t, "normal")
		watchBaseline(t)
		s := newServer(t, e.interpreter, nil, modules...)
		problems := map[string]host.Problem{}
		for _, p := range s.Problems() {
			problems[p.Module] = p
		}
		for _, tc := range cases {
			t.Run(tc.module, func(t *testing.T) {
				p, ok := problems[tc.module]
				if !ok {
					t.Fatalf("%s loaded without a problem, want a refusal", tc.module)
				}
				if !errors.Is(p.Err, host.ErrSchema) || !strings.Contains(p.Err.Error(), tc.want) {
					t.Errorf("got %q, want host.ErrSchema saying %q", p, tc.want)
				}
			})
		}
		if len(problems) != len(cases) {
			t.Errorf("got %d problems, want %d: %v", len(problems), len(cases), s.Problems())
		}
		stillServes(t, s)
	})
}

// TestElicitHostileSchema: elicit returns -2 for every requestedSchema that
// is not the flat form MCP allows, before anyone is asked; the valid one
// at the end is answered.
func TestElicitHostileSchema(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		hostile(t, e, policy(nil), "elicitschemas", func(t *testing.T, s *host.Server) {
			var asked atomic.Int32
			ev := &events{elicit: func(_ context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
				asked.Add(1)
				return abi.ElicitReply{Action: "accept"}, nil
			}}
			if got, want := text(t, s, "probe", "{}", ev), "222222a"; got != want {
				t.Errorf("elicit results %q, want %q (2: bad request, a: answered)", got, want)
			}
			if n := asked.Load(); n != 1 {
				t.Errorf("the user was asked %d times, want once (only the flat schema)", n)
			}
		})
	})
}

// TestOutputSchema: a tool that declares an outputSchema and returns no
// matching structuredContent fails the call with a clear message, unless
// its result is a tool error; the client reads it as an invalid result.
func TestOutputSchema(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		hostile(t, e, policy(nil), "outschema", func(t *testing.T, s *host.Server) {
			_, err := s.Call(context.Background(), "wrongtype", nil, nil)
			guestErr(t, err, host.KindBadOutput, `structuredContent does not match the tool's outputSchema`, `validating /properties/count: type: "many" has type "string", want "integer"`)
			_, err = s.Call(context.Background(), "nostructured", nil, nil)
			guestErr(t, err, host.KindBadOutput, "the tool declares an outputSchema but its result has no structuredContent")
			res, err := s.Call(context.Background(), "iserror", nil, nil)
			if err != nil || !res.IsError {
				t.Errorf("iserror: got %v, %v; want the tool's error result", res, err)
			}
			if got := text(t, s, "good", "{}", nil); got != "3" {
				t.Errorf("good: got %q, want 3", got)
			}
			c := openSession(t, s)
			got, isErr := c.tool("nostructured", nil)
			if want := `tool "nostructured" returned an invalid result: the tool declares an outputSchema but its result has no structuredContent`; !isErr || got != want {
				t.Errorf("MCP: got %q (isError %v), want %q", got, isErr, want)
			}
		})
	})
}
