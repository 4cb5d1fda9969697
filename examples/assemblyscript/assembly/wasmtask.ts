// Bindings for the wasmtask tool ABI, version 1 (abi/ABI.md), for tools in
// AssemblyScript built as WASI preview1 commands with @assemblyscript/wasi-shim
// (which supplies process.stdin/stdout/stderr over wasi_snapshot_preview1
// and exports the top-level code as _start).
//
// What it owns: reading the one request from stdin (readRequest), writing
// the one answer (serve, Module, Result), the resources and prompts of ABI
// 1.2 (ReadResult, ResourceContents, PromptResult, PromptMessage), and the
// optional wasmtask_v1 host functions behind string-taking wrappers
// (progress, status, log, elicit).
// It is one file with no dependency beyond the WASI shim: copy it into a
// project's assembly/ directory and import from "./wasmtask".

// ---- JSON

// A minimal, strict JSON reader and writer for wasmtask tools in
// AssemblyScript: enough for the request, the arguments and elicitation
// replies. It accepts exactly RFC 8259 JSON (one value, nothing after it),
// decodes every escape (surrogate pairs must come in pairs) and refuses
// nesting deeper than MAX_DEPTH. Numbers keep their text.

export const MAX_DEPTH = 64;

export enum Kind { Null, Bool, Number, String, Array, Object }

// A JSON value. Object members keep their order (keys[i] names items[i]);
// get returns the first member of a name.
export class Value {
  kind: Kind = Kind.Null;
  bool: bool = false;
  // The string's value, or the number as written.
  text: string = "";
  items: Value[] = [];
  keys: string[] = [];

  get(name: string): Value | null {
    if (this.kind != Kind.Object) return null;
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == name) return this.items[i];
    }
    return null;
  }

  isString(): bool { return this.kind == Kind.String; }

  // Whether the value is a number with an integral value that an f64
  // holds exactly (|n| < 2^53): 3, -7, 3.0 and 3e2 are.
  isInteger(): bool {
    if (this.kind != Kind.Number) return false;
    const f = parseFloat(this.text);
    return isFinite(f) && Math.floor(f) == f && Math.abs(f) < 9007199254740992.0;
  }

  // The number's value; check isInteger first for an integer.
  toF64(): f64 { return parseFloat(this.text); }
}

// s as a JSON string literal, quotes included; control characters escaped.
export function quote(s: string): string {
  const parts = new Array<string>();
  parts.push("\"");
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let esc = "";
    if (c == 0x22) esc = "\\\"";
    else if (c == 0x5c) esc = "\\\\";
    else if (c == 0x0a) esc = "\\n";
    else if (c == 0x0d) esc = "\\r";
    else if (c == 0x09) esc = "\\t";
    else if (c < 0x20) esc = "\\u00" + (c < 0x10 ? "0" : "") + c.toString(16);
    else continue;
    parts.push(s.substring(start, i));
    parts.push(esc);
    start = i + 1;
  }
  parts.push(s.substring(start));
  parts.push("\"");
  return parts.join("");
}

// Why the last parse failed ("" after a success).
export let parseError = "";

// Parses text as one JSON value; null when it is not, with the reason in
// parseError.
export function parse(text: string): Value | null {
  const p = new Parser(text);
  p.ws();
  const v = p.value(0);
  if (v == null) {
    parseError = p.error;
    return null;
  }
  p.ws();
  if (p.i != text.length) {
    parseError = "invalid JSON at " + p.i.toString() + ": data after the JSON value";
    return null;
  }
  parseError = "";
  return v;
}

class Parser {
  s: string;
  i: i32 = 0;
  error: string = "";

  constructor(s: string) { this.s = s; }

  fail(what: string): Value | null {
    if (this.error == "") this.error = "invalid JSON at " + this.i.toString() + ": " + what;
    return null;
  }

  peek(): i32 { return this.i < this.s.length ? this.s.charCodeAt(this.i) : -1; }

  ws(): void {
    let c = this.peek();
    while (c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d) { this.i++; c = this.peek(); }
  }

  literal(word: string, v: Value): Value | null {
    if (this.s.substr(this.i, word.length) != word) return this.fail("unknown literal");
    this.i += word.length;
    return v;
  }

  value(depth: i32): Value | null {
    const c = this.peek();
    const v = new Value();
    if (c == -1) return this.fail("unexpected end");
    if (c == 0x6e) return this.literal("null", v);
    if (c == 0x74) { v.kind = Kind.Bool; v.bool = true; return this.literal("true", v); }
    if (c == 0x66) { v.kind = Kind.Bool; return this.literal("false", v); }
    if (c == 0x22) {
      const s = this.string();
      if (s == null) return null;
      v.kind = Kind.String;
      v.text = s;
      return v;
    }
    if (c == 0x2d || (c >= 0x30 && c <= 0x39)) return this.number();
    if (c != 0x5b && c != 0x7b) return this.fail("unexpected character");
    if (depth >= MAX_DEPTH) return this.fail("nested too deep");
    const object = c == 0x7b;
    const close = object ? 0x7d : 0x5d;
    v.kind = object ? Kind.Object : Kind.Array;
    this.i++;
    this.ws();
    if (this.peek() == close) { this.i++; return v; }
    while (true) {
      this.ws();
      if (object) {
        if (this.peek() != 0x22) return this.fail("want a member name");
        const k = this.string();
        if (k == null) return null;
        this.ws();
        if (this.peek() != 0x3a) return this.fail("want ':'");
        this.i++;
        this.ws();
        v.keys.push(k);
      }
      const item = this.value(depth + 1);
      if (item == null) return null;
      v.items.push(item);
      this.ws();
      const d = this.peek();
      if (d == 0x2c) { this.i++; continue; }
      if (d == close) { this.i++; return v; }
      return this.fail(object ? "want ',' or '}'" : "want ',' or ']'");
    }
  }

  digits(): i32 {
    const start = this.i;
    let c = this.peek();
    while (c >= 0x30 && c <= 0x39) { this.i++; c = this.peek(); }
    return this.i - start;
  }

  number(): Value | null {
    const start = this.i;
    if (this.peek() == 0x2d) this.i++;
    const c = this.peek();
    if (c == 0x30) this.i++;
    else if (c >= 0x31 && c <= 0x39) this.digits();
    else return this.fail("bad number");
    if (this.peek() == 0x2e) {
      this.i++;
      if (this.digits() == 0) return this.fail("bad fraction");
    }
    if (this.peek() == 0x65 || this.peek() == 0x45) {
      this.i++;
      if (this.peek() == 0x2b || this.peek() == 0x2d) this.i++;
      if (this.digits() == 0) return this.fail("bad exponent");
    }
    const v = new Value();
    v.kind = Kind.Number;
    v.text = this.s.substring(start, this.i);
    return v;
  }

  hex4(): i32 {
    let n = 0;
    for (let k = 0; k < 4; k++) {
      const c = this.peek();
      let d: i32;
      if (c >= 0x30 && c <= 0x39) d = c - 0x30;
      else if (c >= 0x61 && c <= 0x66) d = c - 0x61 + 10;
      else if (c >= 0x41 && c <= 0x46) d = c - 0x41 + 10;
      else return -1;
      n = n * 16 + d;
      this.i++;
    }
    return n;
  }

  // The string at i (after its opening quote is checked), or null.
  string(): string | null {
    this.i++;
    const parts = new Array<string>();
    let start = this.i;
    while (true) {
      const c = this.peek();
      if (c == -1) { this.fail("unterminated string"); return null; }
      if (c < 0x20) { this.fail("control character in string"); return null; }
      if (c == 0x22) {
        parts.push(this.s.substring(start, this.i));
        this.i++;
        return parts.join("");
      }
      // A lone surrogate cannot come from valid UTF-8 input, so only
      // escapes are checked.
      if (c != 0x5c) { this.i++; continue; }
      parts.push(this.s.substring(start, this.i));
      this.i++;
      const e = this.peek();
      this.i++;
      if (e == 0x22) parts.push("\"");
      else if (e == 0x5c) parts.push("\\");
      else if (e == 0x2f) parts.push("/");
      else if (e == 0x62) parts.push("\b");
      else if (e == 0x66) parts.push("\f");
      else if (e == 0x6e) parts.push("\n");
      else if (e == 0x72) parts.push("\r");
      else if (e == 0x74) parts.push("\t");
      else if (e == 0x75) {
        const hi = this.hex4();
        if (hi < 0) { this.fail("bad \\u escape"); return null; }
        if (hi >= 0xdc00 && hi < 0xe000) { this.fail("lone surrogate"); return null; }
        if (hi >= 0xd800 && hi < 0xdc00) {
          if (this.peek() != 0x5c || this.i + 1 >= this.s.length || this.s.charCodeAt(this.i + 1) != 0x75) {
            this.fail("lone surrogate");
            return null;
          }
          this.i += 2;
          const lo = this.hex4();
          if (lo < 0xdc00 || lo >= 0xe000) { this.fail("lone surrogate"); return null; }
          parts.push(String.fromCharCode(hi, lo));
        } else {
          parts.push(String.fromCharCode(hi));
        }
      } else { this.fail("bad escape"); return null; }
      start = this.i;
    }
  }
}

// ---- The ABI

// The ABI version these bindings speak.
export const ABI_VERSION = 1;

@external("wasmtask_v1", "progress")
declare function wt_progress(progress: f64, total: f64, msg: usize, msgLen: i32): void;
@external("wasmtask_v1", "status")
declare function wt_status(msg: usize, msgLen: i32): void;
@external("wasmtask_v1", "log")
declare function wt_log(level: i32, msg: usize, msgLen: i32): void;
@external("wasmtask_v1", "elicit")
declare function wt_elicit(req: usize, reqLen: i32): i32;
@external("wasmtask_v1", "reply")
declare function wt_reply(buf: usize, bufCap: i32): i32;

// Reports how far the call got (total <= 0: unknown); msg may be "".
export function progress(done: f64, total: f64, msg: string): void {
  const b = String.UTF8.encode(msg);
  wt_progress(done, total, changetype<usize>(b), b.byteLength);
}

// Sets the call's short status (a task's statusMessage); "" clears it.
export function status(msg: string): void {
  const b = String.UTF8.encode(msg);
  wt_status(changetype<usize>(b), b.byteLength);
}

export enum Level { Debug = 0, Info = 1, Warning = 2, Error = 3 }

// Writes a log line with a level to the host's log.
export function log(level: Level, msg: string): void {
  const b = String.UTF8.encode(msg);
  wt_log(<i32>level, changetype<usize>(b), b.byteLength);
}

// What elicit got: action is "accept" (content holds the answer),
// "decline" or "cancel"; or "unsupported" (-1: nobody can answer now),
// "bad-request" (-2: the request is not the allowed shape), "limit" (-3: a
// limit on questions refused it), "error" (why says what went wrong).
export class Answer {
  action: string = "";
  content: Value | null = null;
  why: string = "";
}

// Asks the user for input and blocks until they answer. requestedSchema is
// the flat object schema of the answer, as JSON text.
export function elicit(message: string, requestedSchema: string): Answer {
  const req = String.UTF8.encode("{\"message\":" + quote(message) + ",\"requestedSchema\":" + requestedSchema + "}");
  const n = wt_elicit(changetype<usize>(req), req.byteLength);
  const a = new Answer();
  if (n == -1) { a.action = "unsupported"; return a; }
  if (n == -2) { a.action = "bad-request"; return a; }
  if (n == -3) { a.action = "limit"; return a; }
  a.action = "error";
  if (n < 0) { a.why = "elicit returned " + n.toString(); return a; }
  const buf = new ArrayBuffer(n);
  const got = wt_reply(changetype<usize>(buf), n);
  if (got != n) { a.why = "reply copied " + got.toString() + " bytes, want " + n.toString(); return a; }
  const reply = parse(String.UTF8.decode(buf));
  if (reply == null) { a.why = parseError; return a; }
  const action = reply.get("action");
  if (action == null || !action.isString() ||
      (action.text != "accept" && action.text != "decline" && action.text != "cancel")) {
    a.why = "reply without a known action";
    return a;
  }
  a.action = action.text;
  a.content = reply.get("content");
  return a;
}

// A call's answer: one text block, optional structuredContent (JSON text of
// an object, "" for none), and the tool-error flag.
export class Result {
  text: string;
  structured: string = "";
  isError: bool = false;

  constructor(text: string) { this.text = text; }

  static error(why: string): Result {
    const r = new Result(why);
    r.isError = true;
    return r;
  }

  toJSON(): string {
    let out = "{\"content\":[{\"type\":\"text\",\"text\":" + quote(this.text) + "}]";
    if (this.structured.length > 0) out += ",\"structuredContent\":" + this.structured;
    if (this.isError) out += ",\"isError\":true";
    return out + "}";
  }
}

// A protocol error as a request's answer (ABI.md section 12): the client
// gets this JSON-RPC error instead of a result. code is -32602 (invalid
// params), -32603 (internal error), -32002 (not found, for a read) or an
// application code outside -32768..-32000; message is one line.
export class ProtocolError {
  code: i32;
  message: string;

  constructor(code: i32, message: string) { this.code = code; this.message = message; }

  toJSON(): string {
    return "{\"error\":{\"code\":" + this.code.toString() + ",\"message\":" + quote(this.message) + "}}";
  }
}

// One part of a resource a read answers: its URI, media type ("" for none)
// and text.
export class ResourceContents {
  uri: string;
  mimeType: string;
  text: string;

  constructor(uri: string, mimeType: string, text: string) {
    this.uri = uri;
    this.mimeType = mimeType;
    this.text = text;
  }

  toJSON(): string {
    let out = "{\"uri\":" + quote(this.uri);
    if (this.mimeType.length > 0) out += ",\"mimeType\":" + quote(this.mimeType);
    return out + ",\"text\":" + quote(this.text) + "}";
  }
}

// The answer to a read (ABI 1.2): the resource's contents, or an error
// (ReadResult.notFound for a resource that does not exist).
export class ReadResult {
  contents: ResourceContents[] = [];
  error: ProtocolError | null = null;

  static text(uri: string, mimeType: string, text: string): ReadResult {
    const r = new ReadResult();
    r.contents.push(new ResourceContents(uri, mimeType, text));
    return r;
  }

  static notFound(message: string): ReadResult {
    const r = new ReadResult();
    r.error = new ProtocolError(-32002, message);
    return r;
  }

  toJSON(): string {
    const err = this.error;
    if (err != null) return err.toJSON();
    const parts = new Array<string>();
    for (let i = 0; i < this.contents.length; i++) parts.push(this.contents[i].toJSON());
    return "{\"contents\":[" + parts.join(",") + "]}";
  }
}

// One message of a prompt: role "user" or "assistant", one text block.
export class PromptMessage {
  role: string;
  text: string;

  constructor(role: string, text: string) { this.role = role; this.text = text; }

  static user(text: string): PromptMessage { return new PromptMessage("user", text); }
  static assistant(text: string): PromptMessage { return new PromptMessage("assistant", text); }
}

// The answer to a prompt request (ABI 1.2): its messages and an optional
// description (""), or an error (PromptResult.invalid for arguments the
// prompt cannot use).
export class PromptResult {
  description: string = "";
  messages: PromptMessage[] = [];
  error: ProtocolError | null = null;

  static invalid(message: string): PromptResult {
    const r = new PromptResult();
    r.error = new ProtocolError(-32602, message);
    return r;
  }

  toJSON(): string {
    const err = this.error;
    if (err != null) return err.toJSON();
    let out = "{";
    if (this.description.length > 0) out += "\"description\":" + quote(this.description) + ",";
    const parts = new Array<string>();
    for (let i = 0; i < this.messages.length; i++) {
      const m = this.messages[i];
      parts.push("{\"role\":" + quote(m.role) + ",\"content\":{\"type\":\"text\",\"text\":" + quote(m.text) + "}}");
    }
    return out + "\"messages\":[" + parts.join(",") + "]}";
  }
}

// One request: method is "describe", "call", or (ABI 1.2) "read" or
// "prompt". For a call, tool and arguments (an object; {} when absent); for
// a read, uri, and when it matched a resource template, template and
// variables (an object of strings, percent-decoded); for a prompt, prompt
// (its name) and arguments (an object of strings). When the request cannot
// be read, method is "" and error says why.
export class Request {
  method: string = "";
  tool: string = "";
  arguments: Value = new Value();
  uri: string = "";
  template: string = "";
  variables: Value = new Value();
  prompt: string = "";
  error: string = "";

  // The prompt's argument name (or the call's, when a string), or null.
  argument(name: string): string | null { return stringMember(this.arguments, name); }

  // The value of the template's variable name, or null.
  variable(name: string): string | null { return stringMember(this.variables, name); }
}

function stringMember(o: Value, name: string): string | null {
  const v = o.get(name);
  if (v == null || !v.isString()) return null;
  return v.text;
}

// v when it is an object of strings, {} when it is null; null otherwise.
function stringsObject(v: Value | null): Value | null {
  if (v == null || v.kind == Kind.Null) {
    const empty = new Value();
    empty.kind = Kind.Object;
    return empty;
  }
  if (v.kind != Kind.Object) return null;
  for (let i = 0; i < v.items.length; i++) {
    if (!v.items[i].isString()) return null;
  }
  return v;
}

function readStdin(): ArrayBuffer {
  const chunks = new Array<ArrayBuffer>();
  let total = 0;
  while (true) {
    const chunk = new ArrayBuffer(64 << 10);
    const n = process.stdin.read(chunk);
    if (n <= 0) break;
    chunks.push(chunk.slice(0, n));
    total += n;
  }
  const all = new ArrayBuffer(total);
  let off = 0;
  for (let i = 0; i < chunks.length; i++) {
    const c = chunks[i];
    memory.copy(changetype<usize>(all) + off, changetype<usize>(c), c.byteLength);
    off += c.byteLength;
  }
  return all;
}

// Reads all of stdin and decodes it as a request of ABI version 1.
export function readRequest(): Request {
  const r = new Request();
  const v = parse(String.UTF8.decode(readStdin()));
  if (v == null) { r.error = "reading the request: " + parseError; return r; }
  const abi = v.get("abi");
  if (abi == null || !abi.isInteger() || abi.toF64() != ABI_VERSION) {
    r.error = "built for wasmtask ABI v1, got a request for another ABI: rebuild the tool for the host's ABI";
    return r;
  }
  const method = v.get("method");
  if (method == null || !method.isString() ||
      (method.text != "describe" && method.text != "call" && method.text != "read" && method.text != "prompt")) {
    r.error = "unknown method";
    return r;
  }
  r.method = method.text;
  if (r.method == "describe") return r;
  if (r.method == "read") {
    const uri = v.get("uri");
    const vars = stringsObject(v.get("variables"));
    if (uri == null || !uri.isString() || vars == null) {
      r.method = "";
      r.error = "a read request without a uri, or with variables that are not strings";
      return r;
    }
    r.uri = uri.text;
    const tmpl = v.get("template");
    if (tmpl != null && tmpl.isString()) r.template = tmpl.text;
    r.variables = vars;
    return r;
  }
  if (r.method == "prompt") {
    const name = v.get("prompt");
    const args = stringsObject(v.get("arguments"));
    if (name == null || !name.isString() || args == null) {
      r.method = "";
      r.error = "a prompt request without a prompt, or with arguments that are not strings";
      return r;
    }
    r.prompt = name.text;
    r.arguments = args;
    return r;
  }
  const tool = v.get("tool");
  if (tool == null || !tool.isString()) { r.method = ""; r.error = "a call request without a tool"; return r; }
  r.tool = tool.text;
  const args = v.get("arguments");
  if (args == null || args.kind == Kind.Null) {
    r.arguments.kind = Kind.Object;
  } else if (args.kind == Kind.Object) {
    r.arguments = args;
  } else {
    r.method = "";
    r.error = "the call's arguments are not an object";
  }
  return r;
}

// A module's manifest and the handlers of its requests: tools for calls,
// and (ABI 1.2, for a manifest with "revision":2 that declares them)
// resources for reads of its resources and resource templates, prompts for
// its prompts. A request without a handler is answered with an error; the
// host sends only requests for what the manifest declares.
//
//   new Module(MANIFEST).tools(handle).resources(read).prompts(render).serve();
export class Module {
  manifest: string;
  onCall: ((tool: string, args: Value) => Result) | null = null;
  onRead: ((req: Request) => ReadResult) | null = null;
  onPrompt: ((req: Request) => PromptResult) | null = null;

  constructor(manifest: string) { this.manifest = manifest; }

  tools(handler: (tool: string, args: Value) => Result): Module { this.onCall = handler; return this; }
  resources(handler: (req: Request) => ReadResult): Module { this.onRead = handler; return this; }
  prompts(handler: (req: Request) => PromptResult): Module { this.onPrompt = handler; return this; }

  // The answer to req, as the JSON the host reads.
  answer(req: Request): string {
    if (req.method == "describe") return this.manifest;
    if (req.method == "call") {
      const h = this.onCall;
      return h != null ? h(req.tool, req.arguments).toJSON() : Result.error("this module has no tool " + quote(req.tool)).toJSON();
    }
    if (req.method == "read") {
      const h = this.onRead;
      return h != null ? h(req).toJSON() : new ProtocolError(-32603, "this module serves no resources").toJSON();
    }
    const h = this.onPrompt;
    return h != null ? h(req).toJSON() : new ProtocolError(-32603, "this module serves no prompts").toJSON();
  }

  // Runs one request: reads it, writes its answer, then exits. An
  // unreadable request, or one for another ABI version, exits 1 with the
  // reason on stderr.
  serve(): void {
    const req = readRequest();
    if (req.method == "") {
      process.stderr.write(req.error + "\n");
      process.exit(1);
      return;
    }
    process.stdout.write(this.answer(req));
    process.exit(0);
  }
}

// Runs one request of a module that serves tools only: writes manifest for
// describe, or handler's result for a call, then exits. An unreadable
// request, or one for another ABI version, exits 1 with the reason on
// stderr. The same as new Module(manifest).tools(handler).serve().
export function serve(manifest: string, handler: (tool: string, args: Value) => Result): void {
  new Module(manifest).tools(handler).serve();
}
