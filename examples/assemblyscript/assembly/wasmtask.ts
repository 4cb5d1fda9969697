// Bindings for the wasmtask tool ABI, version 1 (abi/ABI.md), for tools in
// AssemblyScript built as WASI preview1 commands with @assemblyscript/wasi-shim
// (which supplies process.stdin/stdout/stderr over wasi_snapshot_preview1
// and exports the top-level code as _start).
//
// What it owns: reading the one request from stdin (readRequest), writing
// the one answer (serve, Result), and the optional wasmtask_v1 host
// functions behind string-taking wrappers (progress, status, log, elicit).
// JSON is in ./json.

import { Kind, Value, parse, parseError, quote } from "./json";

export { Kind, Value, parse, quote } from "./json";

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

// One request: method is "describe" or "call"; for a call, tool and
// arguments (an object; {} when absent). When the request cannot be read,
// method is "" and error says why.
export class Request {
  method: string = "";
  tool: string = "";
  arguments: Value = new Value();
  error: string = "";
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
  if (method == null || !method.isString() || (method.text != "describe" && method.text != "call")) {
    r.error = "unknown method";
    return r;
  }
  r.method = method.text;
  if (r.method == "describe") return r;
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

// Runs one request: writes manifest for describe, or handler's result for a
// call, then exits. An unreadable request, or one for another ABI version,
// exits 1 with the reason on stderr.
export function serve(manifest: string, handler: (tool: string, args: Value) => Result): void {
  const req = readRequest();
  if (req.method == "") {
    process.stderr.write(req.error + "\n");
    process.exit(1);
    return;
  }
  const answer = req.method == "describe" ? manifest : handler(req.tool, req.arguments).toJSON();
  process.stdout.write(answer);
  process.exit(0);
}
