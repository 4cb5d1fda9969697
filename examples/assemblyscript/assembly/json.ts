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
