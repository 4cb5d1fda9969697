// caesar: a wasmtask tool module in AssemblyScript on the ./wasmtask
// bindings. The tool shifts the Latin letters of a text by `shift` places
// (A–Z and a–z wrap around; everything else, accents and emoji included, is
// kept), reports progress when done and logs what it did.
//
// Build (in examples/assemblyscript, after npm ci):
//   npx asc assembly/index.ts --config node_modules/@assemblyscript/wasi-shim/asconfig.json -O3 -o caesar.wasm

import { Level, Result, Value, log, progress, quote, serve } from "./wasmtask";

const MANIFEST = `{"abi":1,"name":"caesar","tools":[
{"name":"caesar","title":"Caesar cipher",
 "description":"Shifts the letters A-Z and a-z of text by shift places, wrapping around; other characters are kept.",
 "inputSchema":{"type":"object","properties":{
   "text":{"type":"string"},
   "shift":{"type":"integer","minimum":-1000,"maximum":1000}},
  "required":["text","shift"]},
 "outputSchema":{"type":"object","properties":{"text":{"type":"string"},"shift":{"type":"integer"}},"required":["text","shift"]},
 "annotations":{"readOnlyHint":true,"openWorldHint":false}}
]}`;

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
  const units = new Array<i32>(s.length);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) units[i] = 0x41 + (c - 0x41 + shift) % 26;
    else if (c >= 0x61 && c <= 0x7a) units[i] = 0x61 + (c - 0x61 + shift) % 26;
    else units[i] = c;
  }
  const out = String.fromCharCodes(units);
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

serve(MANIFEST, handle);
