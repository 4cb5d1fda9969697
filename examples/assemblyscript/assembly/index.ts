// caesar: a wasmtask tool module in AssemblyScript on the ./wasmtask
// bindings. The tool shifts the Latin letters of a text by `shift` places
// (A–Z and a–z wrap around; everything else, accents and emoji included, is
// kept), reports progress when done and logs what it did. Beside it (ABI
// 1.2) the module serves the resource caesar://about and the prompt
// explain, which asks the model to walk through one shift.
//
// Build (in examples/assemblyscript, after npm ci):
//   npx asc assembly/index.ts --config node_modules/@assemblyscript/wasi-shim/asconfig.json -O3 -o caesar.wasm

import { Level, Module, PromptMessage, PromptResult, ReadResult, Request, Result, Value, log, progress, quote } from "./wasmtask";

const MANIFEST = `{"abi":1,"revision":2,"name":"caesar","tools":[
{"name":"caesar","title":"Caesar cipher",
 "description":"Shifts the letters A-Z and a-z of text by shift places, wrapping around; other characters are kept.",
 "inputSchema":{"type":"object","properties":{
   "text":{"type":"string"},
   "shift":{"type":"integer","minimum":-1000,"maximum":1000}},
  "required":["text","shift"]},
 "outputSchema":{"type":"object","properties":{"text":{"type":"string"},"shift":{"type":"integer"}},"required":["text","shift"]},
 "annotations":{"readOnlyHint":true,"openWorldHint":false}}
],
"resources":[
{"uri":"caesar://about","name":"about","title":"The Caesar cipher","mimeType":"text/plain"}
],
"prompts":[
{"name":"explain","title":"Explain a shift",
 "description":"Asks for a step-by-step explanation of how a shift enciphers a text.",
 "arguments":[{"name":"text","required":true},{"name":"shift","description":"an integer from -1000 to 1000","required":true}]}
]}`;

const ABOUT = "The Caesar cipher shifts each letter A-Z and a-z by the same number of places, wrapping around: with shift 3, A becomes D and z becomes c. Other characters are kept.";

// s with its Latin letters shifted by shift places (0..25).
function shiftText(s: string, shift: i32): string {
  const units = new Array<i32>(s.length);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) units[i] = 0x41 + (c - 0x41 + shift) % 26;
    else if (c >= 0x61 && c <= 0x7a) units[i] = 0x61 + (c - 0x61 + shift) % 26;
    else units[i] = c;
  }
  return String.fromCharCodes(units);
}

// shift as an integer from -1000 to 1000 reduced to 0..25, or -1.
function parseShift(s: string): i32 {
  if (s.length == 0 || s.length > 5) return -1;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (!(c >= 0x30 && c <= 0x39) && !(i == 0 && c == 0x2d && s.length > 1)) return -1;
  }
  const n = I32.parseInt(s);
  if (n < -1000 || n > 1000) return -1;
  return (n % 26 + 26) % 26;
}

function caesar(args: Value): Result {
  const text = args.get("text");
  const shiftArg = args.get("shift");
  if (text == null || !text.isString()) return Result.error("caesar needs a string text");
  if (shiftArg == null || !shiftArg.isInteger() || Math.abs(shiftArg.toF64()) > 1000) {
    return Result.error("shift must be an integer from -1000 to 1000");
  }
  // The shift in 0..25.
  const shift = ((<i32>shiftArg.toF64() % 26) + 26) % 26;
  const s = text.text;
  const out = shiftText(s, shift);
  log(Level.Info, "shifted " + s.length.toString() + " UTF-16 code units by " + shift.toString());
  progress(<f64>s.length, <f64>s.length, "done");
  const r = new Result(out);
  r.structured = "{\"text\":" + quote(out) + ",\"shift\":" + shift.toString() + "}";
  return r;
}

function handle(tool: string, args: Value): Result {
  if (tool == "caesar") return caesar(args);
  return Result.error("unknown tool " + quote(tool));
}

function read(req: Request): ReadResult {
  if (req.uri == "caesar://about") return ReadResult.text(req.uri, "text/plain", ABOUT);
  return ReadResult.notFound("no resource " + req.uri);
}

function explain(req: Request): PromptResult {
  const text = req.argument("text");
  const shiftArg = req.argument("shift");
  const shift = shiftArg != null ? parseShift(shiftArg) : -1;
  if (text == null || shift < 0) return PromptResult.invalid("explain needs a text and a shift from -1000 to 1000");
  const r = new PromptResult();
  r.description = "How shift " + shift.toString() + " enciphers a text";
  r.messages.push(PromptMessage.user("Explain step by step how a Caesar shift of " + shift.toString() +
    " turns \"" + text + "\" into \"" + shiftText(text, shift) + "\"."));
  return r;
}

new Module(MANIFEST).tools(handle).resources(read).prompts(explain).serve();
