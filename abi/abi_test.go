package abi_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wasmtask/wasmtask/abi"
)

func TestDecodeManifest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		wantErr error  // nil = success
		wantMsg string // substring of the error
	}{
		{"minimal", `{"abi":1,"tools":[{"name":"echo"}]}`, nil, ""},
		{"full", `{"abi":1,"name":"demo","tools":[{"name":"slow","title":"Slow","description":"d",
			"inputSchema":{"type":"object","properties":{"n":{"type":"integer"}}},
			"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},
			"taskSupport":"optional","cache":{"cacheable":true,"ttlMs":1000},
			"grants":{"env":["HOME"],"dirs":[{"guestPath":"/data"}],"memoryMiB":64}}]}`, nil, ""},
		{"not json", `hello`, abi.ErrManifest, "not valid JSON at byte 1"},
		{"trailing data", `{"abi":1,"tools":[{"name":"a"}]} {}`, abi.ErrManifest, "trailing data"},
		{"trailing brace", `{"abi":1,"tools":[{"name":"a"}]}}`, abi.ErrManifest, "trailing data"},
		{"wrong version", `{"abi":2,"tools":[{"name":"a"}]}`, abi.ErrVersion, "declares ABI v2, this host speaks v1"},
		{"missing version", `{"tools":[{"name":"a"}]}`, abi.ErrVersion, `add "abi": 1`},
		{"version 0", `{"abi":0,"tools":[{"name":"a"}]}`, abi.ErrVersion, "ABI v0"},
		{"no tools", `{"abi":1,"tools":[]}`, abi.ErrManifest, "declares no tools"},
		{"too many tools", `{"abi":1,"tools":[` + strings.TrimSuffix(strings.Repeat(`{"name":"t"},`, abi.MaxTools+1), ",") + `]}`, abi.ErrManifest, "declares 257 tools, at most 256"},
		{"empty name", `{"abi":1,"tools":[{"name":""}]}`, abi.ErrManifest, "invalid name"},
		{"bad name", `{"abi":1,"tools":[{"name":"a b"}]}`, abi.ErrManifest, "invalid name"},
		{"duplicate", `{"abi":1,"tools":[{"name":"a"},{"name":"a"}]}`, abi.ErrManifest, `duplicate tool name "a"`},
		{"bad task support", `{"abi":1,"tools":[{"name":"a","taskSupport":"always"}]}`, abi.ErrManifest, "taskSupport"},
		{"schema not object", `{"abi":1,"tools":[{"name":"a","inputSchema":[1]}]}`, abi.ErrManifest, "inputSchema: not a JSON object"},
		{"schema wrong type", `{"abi":1,"tools":[{"name":"a","inputSchema":{"type":"string"}}]}`, abi.ErrManifest, `want "object"`},
		{"schema null", `{"abi":1,"tools":[{"name":"a","inputSchema":null}]}`, abi.ErrManifest, "inputSchema"},
		{"properties not object", `{"abi":1,"tools":[{"name":"a","inputSchema":{"type":"object","properties":[]}}]}`, abi.ErrManifest, `"properties" is not an object`},
		{"property schema boolean", `{"abi":1,"tools":[{"name":"a","inputSchema":{"type":"object","properties":{"x":true}}}]}`, abi.ErrManifest, `"properties" member "x" is not an object`},
		{"required not array", `{"abi":1,"tools":[{"name":"a","inputSchema":{"type":"object","required":"x"}}]}`, abi.ErrManifest, `"required" is not an array`},
		{"required number", `{"abi":1,"tools":[{"name":"a","outputSchema":{"type":"object","required":[1]}}]}`, abi.ErrManifest, `outputSchema: "required" has a member`},
		{"output schema wrong", `{"abi":1,"tools":[{"name":"a","outputSchema":{}}]}`, abi.ErrManifest, "outputSchema"},
		{"negative cache ttl", `{"abi":1,"tools":[{"name":"a","cache":{"cacheable":true,"ttlMs":-1}}]}`, abi.ErrManifest, "negative"},
		{"relative mount", `{"abi":1,"tools":[{"name":"a","grants":{"dirs":[{"guestPath":"data"}]}}]}`, abi.ErrManifest, "not absolute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := abi.DecodeManifest([]byte(tc.in))
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				for _, tool := range m.Tools {
					if tool.TaskSupport == "" || len(tool.InputSchema) == 0 {
						t.Errorf("tool %q: defaults not applied: taskSupport=%q inputSchema=%s", tool.Name, tool.TaskSupport, tool.InputSchema)
					}
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got error %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("got error %q, want it to contain %q", err, tc.wantMsg)
			}
		})
	}
}

func TestDecodeManifestDefaults(t *testing.T) {
	m, err := abi.DecodeManifest([]byte(`{"abi":1,"tools":[{"name":"a"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Tools[0].TaskSupport, abi.TaskForbidden; got != want {
		t.Errorf("taskSupport: got %q, want %q", got, want)
	}
	if got, want := string(m.Tools[0].InputSchema), `{"type":"object"}`; got != want {
		t.Errorf("inputSchema: got %s, want %s", got, want)
	}
}

func TestDecodeResult(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		wantMsg string // "" = success
	}{
		{"text", `{"content":[{"type":"text","text":"hi"}]}`, ""},
		{"surrounding space", "\n {\"content\":[]} \n", ""},
		{"structured", `{"content":[],"structuredContent":{"n":1},"isError":true}`, ""},
		{"image", `{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`, ""},
		{"empty", ``, "wrote nothing"},
		{"garbage", `\x00\x01garbage`, "not valid JSON at byte 1"},
		{"two documents", `{"content":[]}{"content":[]}`, "trailing data"},
		{"no content", `{"isError":false}`, `missing "content"`},
		{"unknown type", `{"content":[{"type":"video"}]}`, `unknown type "video"`},
		{"image without data", `{"content":[{"type":"image"}]}`, "needs data and mimeType"},
		{"structured not object", `{"content":[],"structuredContent":[1]}`, "structuredContent is not a JSON object"},
		{"wrong field type", `{"content":"text"}`, `"content" is a string, want an array`},
		{"empty text", `{"content":[{"type":"text"},{"type":"text","text":""}]}`, ""},
		{"text with data", `{"content":[{"type":"text","text":"a","data":"AA=="}]}`, `has "text" only`},
		{"image with text", `{"content":[{"type":"image","text":"a","data":"AA==","mimeType":"image/png"}]}`, `not "text"`},
		{"bad base64", `{"content":[{"type":"image","data":"not base64!","mimeType":"image/png"}]}`, "not valid base64"},
		{"unpadded base64", `{"content":[{"type":"image","data":"AA","mimeType":"image/png"}]}`, "not valid base64"},
		{"audio as image type", `{"content":[{"type":"audio","data":"AA==","mimeType":"image/png"}]}`, "not an audio type"},
		{"media type garbage", `{"content":[{"type":"image","data":"AA==","mimeType":"image/"}]}`, "not a media type"},
		{"bare subtype", `{"content":[{"type":"image","data":"AA==","mimeType":"png"}]}`, "not a media type"},
		{"text as image", `{"content":[{"type":"image","data":"AA==","mimeType":"text/plain"}]}`, "not an image type"},
		{"media type params", `{"content":[{"type":"audio","data":"AA==","mimeType":"audio/ogg; codecs=opus"}]}`, ""},
		// "\x89PNG\r\n\x1a\n" in base64:
		{"png declared png", `{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}`, ""},
		{"png declared jpeg", `{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/jpeg"}]}`, "which is image/png"},
		// "RIFF....WAVE":
		{"wav alias", `{"content":[{"type":"audio","data":"UklGRgAAAABXQVZF","mimeType":"audio/x-wav"}]}`, ""},
		{"too deep", `{"content":[],"structuredContent":` + strings.Repeat(`{"a":`, abi.DefaultResultDepth) + `1` + strings.Repeat(`}`, abi.DefaultResultDepth) + `}`, "nested deeper than 64"},
		{"deep but allowed", `{"content":[],"structuredContent":` + strings.Repeat(`{"a":`, abi.DefaultResultDepth-1) + `1` + strings.Repeat(`}`, abi.DefaultResultDepth-1) + `}`, ""},
		{"brackets in strings", `{"content":[{"type":"text","text":"` + strings.Repeat(`[{\"`, 100) + `"}]}`, ""},
		{"number beyond float64", `{"content":[],"structuredContent":{"n":1e400}}`, "the number 1e400 is outside the range of a 64-bit float"},
		{"integer beyond float64", `{"content":[],"structuredContent":{"n":` + strings.Repeat("9", 400) + `}}`, "outside the range of a 64-bit float"},
		{"beyond float64 anywhere", `{"content":[],"x":[-2e308]}`, "outside the range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := abi.DecodeResult([]byte(tc.in), abi.ResultLimits{})
			if tc.wantMsg == "" {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				return
			}
			if !errors.Is(err, abi.ErrResult) {
				t.Fatalf("got error %v, want ErrResult", err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("got error %q, want it to contain %q", err, tc.wantMsg)
			}
		})
	}
}

// TestDecodeResultCleansUnicode: lone surrogates and bytes that are not
// UTF-8 leave DecodeResult as U+FFFD, in structuredContent (values and
// member names) and in text.
func TestDecodeResultCleansUnicode(t *testing.T) {
	in := "{\"content\":[{\"type\":\"text\",\"text\":\"a\\ud800b\xffc\"}],\"structuredContent\":{\"k\\udc00\":\"v\\ud800\",\"ok\":\"\\ud83d\\ude00\",\"raw\":\"\xfe\"}}"
	r, err := abi.DecodeResult([]byte(in), abi.ResultLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Content[0].Text, "a\uFFFDb\uFFFDc"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	if got, want := string(r.StructuredContent), `{"k\ufffd":"v\ufffd","ok":"\ud83d\ude00","raw":"\ufffd"}`; got != want {
		t.Errorf("structuredContent = %s, want %s", got, want)
	}
}

// TestDecodeResultCounts: content blocks and values are bounded by the
// limits given (a zero field: the default), and a result over one is too
// large as well as invalid.
func TestDecodeResultCounts(t *testing.T) {
	blocks := func(n int) string {
		return `{"content":[` + strings.TrimSuffix(strings.Repeat(`{"type":"text","text":"x"},`, n), ",") + `]}`
	}
	for _, tc := range []struct {
		name string
		in   string
		lim  abi.ResultLimits
		want string // "": accepted
	}{
		{"default blocks", blocks(abi.DefaultResultBlocks), abi.ResultLimits{MaxValues: 1 << 20}, ""},
		{"one block more", blocks(abi.DefaultResultBlocks + 1), abi.ResultLimits{MaxValues: 1 << 20}, "more than 10000 content blocks"},
		{"blocks lowered", blocks(3), abi.ResultLimits{MaxBlocks: 2}, "more than 2 content blocks"},
		{"default values", `{"content":[],"structuredContent":{"a":[` + strings.TrimSuffix(strings.Repeat("0,", abi.DefaultResultValues-4), ",") + `]}}`, abi.ResultLimits{}, ""},
		{"one value more", `{"content":[],"structuredContent":{"a":[` + strings.TrimSuffix(strings.Repeat("0,", abi.DefaultResultValues-3), ",") + `]}}`, abi.ResultLimits{}, "more than 100000 JSON values"},
		{"depth raised", `{"content":[],"structuredContent":{"a":` + strings.Repeat(`[`, 99) + strings.Repeat(`]`, 99) + `}}`, abi.ResultLimits{MaxDepth: 101}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := abi.DecodeResult([]byte(tc.in), tc.lim)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				return
			}
			if !errors.Is(err, abi.ErrResult) || !errors.Is(err, abi.ErrResultTooLarge) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want ErrResult and ErrResultTooLarge saying %q", err, tc.want)
			}
		})
	}
}

// FuzzDecodeManifest checks that any bytes give either a valid manifest or
// an error wrapping a sentinel, and never panic.
func FuzzDecodeManifest(f *testing.F) {
	f.Add([]byte(`{"abi":1,"tools":[{"name":"echo","taskSupport":"optional","inputSchema":{"type":"object"}}]}`))
	f.Add([]byte(`{"abi":2}`))
	f.Add([]byte(`{"abi":1,"tools":[{"name":"a"},{"name":"a"}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := abi.DecodeManifest(b)
		if err != nil {
			if !errors.Is(err, abi.ErrManifest) && !errors.Is(err, abi.ErrVersion) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, tool := range m.Tools {
			if seen[tool.Name] {
				t.Fatalf("duplicate %q accepted", tool.Name)
			}
			seen[tool.Name] = true
			switch tool.TaskSupport {
			case abi.TaskForbidden, abi.TaskOptional, abi.TaskRequired:
			default:
				t.Fatalf("taskSupport %q accepted", tool.TaskSupport)
			}
		}
	})
}

// FuzzDecodeResult checks that guest output never panics the decoder and
// that accepted results have content.
func FuzzDecodeResult(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"hi"}],"isError":false}`))
	f.Add([]byte(`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}],"structuredContent":{}}`))
	f.Add([]byte("\x00\xff"))
	f.Add([]byte(`{"content":[{"type":"text","text":"\ud800"}],"structuredContent":{"\udc00":"\ud83d\ude00x\ud800"}}`))
	f.Add([]byte("{\"content\":[],\"structuredContent\":{\"a\xff\":\"\xed\xa0\x80\"}}"))
	f.Add([]byte(`{"content":[],"structuredContent":{"n":1e400,"m":-0.5e-400}}`))
	f.Add([]byte(`{"content":[],"structuredContent":` + strings.Repeat(`{"a":`, 64) + `1` + strings.Repeat(`}`, 64) + `}`))
	f.Add([]byte(`{"content":[` + strings.Repeat(`{"type":"text","text":""},`, 40) + `{"type":"text"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := abi.DecodeResult(b, abi.ResultLimits{MaxBlocks: 32, MaxValues: 512})
		if err != nil {
			if !errors.Is(err, abi.ErrResult) {
				t.Fatalf("error %v does not wrap ErrResult", err)
			}
			return
		}
		if r.Content == nil && r.Error == nil {
			t.Fatal("accepted a result without content")
		}
		if len(r.Content) > 32 {
			t.Fatalf("accepted %d content blocks, more than the limit of 32", len(r.Content))
		}
		for _, c := range r.Content {
			if !utf8.ValidString(c.Text) {
				t.Fatalf("accepted text %q that is not UTF-8", c.Text)
			}
		}
		// (FuzzCleanResult holds the escapes to encoding/json.)
		if sc := r.StructuredContent; len(sc) > 0 && (!utf8.Valid(sc) || !json.Valid(sc)) {
			t.Fatalf("accepted structuredContent %q that is not valid UTF-8 JSON", sc)
		}
	})
}

func TestValidToolName(t *testing.T) {
	for name, want := range map[string]bool{
		"echo": true, "a.b-c_D9": true, strings.Repeat("x", 128): true,
		"": false, strings.Repeat("x", 129): false, "a b": false, "é": false, "a/b": false, "a\x00": false,
	} {
		if got := abi.ValidToolName(name); got != want {
			t.Errorf("ValidToolName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestDecodeResultProtocolError: a result may be a protocol error (ABI
// 1.1), alone, with a code the tool may choose and one bounded line.
func TestDecodeResultProtocolError(t *testing.T) {
	for _, ok := range []string{
		`{"error":{"code":-32603,"message":"the store is down"}}`,
		`{"content":[],"error":{"code":-32602,"message":"bad"}}`,
		`{"error":{"code":1001,"message":"application error"}}`,
		`{"error":{"code":-40000,"message":"below the reserved range"}}`,
	} {
		r, err := abi.DecodeResult([]byte(ok), abi.ResultLimits{})
		if err != nil || r.Error == nil {
			t.Errorf("%s: %v, want a protocol error", ok, err)
		}
	}
	for bad, why := range map[string]string{
		`{"error":{"code":-32021,"message":"declare a capability"}}`:                     "reserved",
		`{"error":{"code":-32601,"message":"no such method"}}`:                           "reserved",
		`{"error":{"code":4294967296,"message":"big"}}`:                                  "32-bit",
		`{"error":{"code":-32603,"message":""}}`:                                         "empty",
		`{"error":{"code":-32603,"message":"two\nlines"}}`:                               "control",
		`{"error":{"code":-32603,"message":"` + strings.Repeat("x", 1025) + `"}}`:        "bytes",
		`{"content":[{"type":"text","text":"x"}],"error":{"code":-32603,"message":"x"}}`: "alone",
		`{"isError":true,"error":{"code":-32603,"message":"x"}}`:                         "alone",
	} {
		if _, err := abi.DecodeResult([]byte(bad), abi.ResultLimits{}); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%.60s: %v, want an invalid result saying %q", bad, err, why)
		}
	}
}
