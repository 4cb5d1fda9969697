//! Bindings for the wasmtask tool ABI, version 1 (abi/ABI.md in the wasmtask
//! repository), for Rust tools built as WASI preview1 commands
//! (`--target wasm32-wasi`, a `bin` crate: the host runs `_start`).
//!
//! What it owns: reading the one request from stdin ([`Request::read`]),
//! writing the one answer to stdout ([`serve`], [`ToolResult`]), the
//! optional `wasmtask_v1` host functions behind safe wrappers ([`progress`],
//! [`status`], [`log`], [`elicit`]), and a minimal JSON reader and writer
//! ([`json`]). It has no dependency, so it builds offline, and it is one
//! file: copy it into a crate as `src/wasmtask.rs` and declare `mod wasmtask;`.
//!
//! A tool module is a `main` that hands its manifest and a handler to
//! [`serve`]:
//!
//! ```no_run
//! use wasmtask::{json::Value, ToolResult};
//!
//! const MANIFEST: &str = r#"{"abi":1,"tools":[{"name":"hello","inputSchema":{"type":"object"}}]}"#;
//!
//! fn main() {
//!     wasmtask::serve(MANIFEST, |tool: &str, _args: &Value| match tool {
//!         "hello" => ToolResult::text("Hello from Rust!"),
//!         _ => ToolResult::error(format!("unknown tool {}", tool)),
//!     })
//! }
//! ```

// Copied into a tool crate as a module, the bindings' unused parts are not
// dead code to warn about.
#![allow(dead_code)]

pub mod json {
    //! A minimal, strict JSON reader and writer: enough for a tool's request,
    //! arguments and elicitation replies, with no dependency.
    //!
    //! The reader accepts exactly RFC 8259 JSON (one value, surrounding
    //! whitespace, nothing after it), decodes every string escape including
    //! surrogate pairs, and refuses nesting deeper than [`MAX_DEPTH`]. Numbers
    //! keep their text, so an integer is read exactly (see [`Value::as_i64`]).

    use std::fmt::Write;

    /// The deepest nesting of arrays and objects [`parse`] accepts.
    pub const MAX_DEPTH: usize = 64;

    /// A JSON value. Object members keep their order; a repeated name keeps
    /// every occurrence and [`Value::get`] returns the first.
    #[derive(Clone, Debug, PartialEq)]
    pub enum Value {
        Null,
        Bool(bool),
        /// A number, as written (already checked to be JSON number syntax).
        Number(String),
        String(String),
        Array(Vec<Value>),
        Object(Vec<(String, Value)>),
    }

    impl Value {
        /// The member `name` of an object, or None.
        pub fn get(&self, name: &str) -> Option<&Value> {
            match self {
                Value::Object(members) => members.iter().find(|(k, _)| k == name).map(|(_, v)| v),
                _ => None,
            }
        }

        pub fn as_str(&self) -> Option<&str> {
            match self {
                Value::String(s) => Some(s),
                _ => None,
            }
        }

        pub fn as_bool(&self) -> Option<bool> {
            match self {
                Value::Bool(b) => Some(*b),
                _ => None,
            }
        }

        /// The number as an i64 when it is an integer that fits: `3`, `-7`,
        /// and also `3.0` or `3e2`, which JSON Schema counts as integers.
        pub fn as_i64(&self) -> Option<i64> {
            let text = match self {
                Value::Number(t) => t,
                _ => return None,
            };
            if let Ok(n) = text.parse::<i64>() {
                return Some(n);
            }
            let f = text.parse::<f64>().ok()?;
            // ±2^63 are exact as f64s; from 2^63 up does not fit.
            const TWO_63: f64 = 9_223_372_036_854_775_808.0;
            if f.fract() == 0.0 && (-TWO_63..TWO_63).contains(&f) {
                Some(f as i64)
            } else {
                None
            }
        }

        /// The value as compact JSON text.
        pub fn to_json(&self) -> String {
            let mut out = String::new();
            self.write_to(&mut out);
            out
        }

        fn write_to(&self, out: &mut String) {
            match self {
                Value::Null => out.push_str("null"),
                Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                Value::Number(t) => out.push_str(t),
                Value::String(s) => out.push_str(&quote(s)),
                Value::Array(items) => {
                    out.push('[');
                    for (i, v) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        v.write_to(out);
                    }
                    out.push(']');
                }
                Value::Object(members) => {
                    out.push('{');
                    for (i, (k, v)) in members.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(&quote(k));
                        out.push(':');
                        v.write_to(out);
                    }
                    out.push('}');
                }
            }
        }
    }

    /// `s` as a JSON string literal, quotes included. Control characters are
    /// escaped; everything else is written as UTF-8.
    pub fn quote(s: &str) -> String {
        let mut out = String::with_capacity(s.len() + 2);
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x20 => {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    /// Parses `text` as one JSON value.
    pub fn parse(text: &str) -> Result<Value, String> {
        let mut p = Parser {
            b: text.as_bytes(),
            i: 0,
        };
        p.ws();
        let v = p.value(0)?;
        p.ws();
        if p.i != p.b.len() {
            return Err(p.err("data after the JSON value"));
        }
        Ok(v)
    }

    struct Parser<'a> {
        b: &'a [u8],
        i: usize,
    }

    impl<'a> Parser<'a> {
        fn err(&self, what: &str) -> String {
            format!("invalid JSON at byte {}: {}", self.i, what)
        }

        fn peek(&self) -> Option<u8> {
            self.b.get(self.i).copied()
        }

        fn ws(&mut self) {
            while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
                self.i += 1;
            }
        }

        fn eat(&mut self, c: u8) -> Result<(), String> {
            if self.peek() == Some(c) {
                self.i += 1;
                Ok(())
            } else {
                Err(self.err(&format!("want '{}'", c as char)))
            }
        }

        fn literal(&mut self, word: &str, v: Value) -> Result<Value, String> {
            if self.b[self.i..].starts_with(word.as_bytes()) {
                self.i += word.len();
                Ok(v)
            } else {
                Err(self.err("unknown literal"))
            }
        }

        fn value(&mut self, depth: usize) -> Result<Value, String> {
            match self.peek() {
                None => Err(self.err("unexpected end")),
                Some(b'n') => self.literal("null", Value::Null),
                Some(b't') => self.literal("true", Value::Bool(true)),
                Some(b'f') => self.literal("false", Value::Bool(false)),
                Some(b'"') => self.string().map(Value::String),
                Some(b'[' | b'{') if depth >= MAX_DEPTH => Err(self.err("nested too deep")),
                Some(b'[') => {
                    self.i += 1;
                    let mut items = Vec::new();
                    self.ws();
                    if self.peek() == Some(b']') {
                        self.i += 1;
                        return Ok(Value::Array(items));
                    }
                    loop {
                        self.ws();
                        items.push(self.value(depth + 1)?);
                        self.ws();
                        match self.peek() {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                return Ok(Value::Array(items));
                            }
                            _ => return Err(self.err("want ',' or ']'")),
                        }
                    }
                }
                Some(b'{') => {
                    self.i += 1;
                    let mut members = Vec::new();
                    self.ws();
                    if self.peek() == Some(b'}') {
                        self.i += 1;
                        return Ok(Value::Object(members));
                    }
                    loop {
                        self.ws();
                        if self.peek() != Some(b'"') {
                            return Err(self.err("want a member name"));
                        }
                        let k = self.string()?;
                        self.ws();
                        self.eat(b':')?;
                        self.ws();
                        let v = self.value(depth + 1)?;
                        members.push((k, v));
                        self.ws();
                        match self.peek() {
                            Some(b',') => self.i += 1,
                            Some(b'}') => {
                                self.i += 1;
                                return Ok(Value::Object(members));
                            }
                            _ => return Err(self.err("want ',' or '}'")),
                        }
                    }
                }
                Some(b'-' | b'0'..=b'9') => self.number(),
                Some(_) => Err(self.err("unexpected character")),
            }
        }

        fn digits(&mut self) -> usize {
            let start = self.i;
            while let Some(b'0'..=b'9') = self.peek() {
                self.i += 1;
            }
            self.i - start
        }

        fn number(&mut self) -> Result<Value, String> {
            let start = self.i;
            if self.peek() == Some(b'-') {
                self.i += 1;
            }
            match self.peek() {
                Some(b'0') => self.i += 1,
                Some(b'1'..=b'9') => {
                    self.digits();
                }
                _ => return Err(self.err("bad number")),
            }
            if self.peek() == Some(b'.') {
                self.i += 1;
                if self.digits() == 0 {
                    return Err(self.err("bad fraction"));
                }
            }
            if let Some(b'e' | b'E') = self.peek() {
                self.i += 1;
                if let Some(b'+' | b'-') = self.peek() {
                    self.i += 1;
                }
                if self.digits() == 0 {
                    return Err(self.err("bad exponent"));
                }
            }
            // The bytes are ASCII digits and signs: valid UTF-8.
            Ok(Value::Number(
                String::from_utf8_lossy(&self.b[start..self.i]).into_owned(),
            ))
        }

        fn hex4(&mut self) -> Result<u32, String> {
            let mut n = 0;
            for _ in 0..4 {
                let d = match self.peek() {
                    Some(c @ b'0'..=b'9') => c - b'0',
                    Some(c @ b'a'..=b'f') => c - b'a' + 10,
                    Some(c @ b'A'..=b'F') => c - b'A' + 10,
                    _ => return Err(self.err("bad \\u escape")),
                };
                n = n * 16 + d as u32;
                self.i += 1;
            }
            Ok(n)
        }

        fn string(&mut self) -> Result<String, String> {
            self.eat(b'"')?;
            let mut out: Vec<u8> = Vec::new();
            loop {
                let c = match self.peek() {
                    None => return Err(self.err("unterminated string")),
                    Some(c) => c,
                };
                self.i += 1;
                match c {
                    b'"' => break,
                    b'\\' => {
                        let e = self.peek().ok_or_else(|| self.err("unterminated string"))?;
                        self.i += 1;
                        let ch = match e {
                            b'"' => '"',
                            b'\\' => '\\',
                            b'/' => '/',
                            b'b' => '\u{8}',
                            b'f' => '\u{c}',
                            b'n' => '\n',
                            b'r' => '\r',
                            b't' => '\t',
                            b'u' => {
                                let hi = self.hex4()?;
                                let code = if (0xD800..0xDC00).contains(&hi) {
                                    // A high surrogate must be followed by \u and a low one.
                                    if !self.b[self.i..].starts_with(b"\\u") {
                                        return Err(self.err("lone surrogate"));
                                    }
                                    self.i += 2;
                                    let lo = self.hex4()?;
                                    if !(0xDC00..0xE000).contains(&lo) {
                                        return Err(self.err("lone surrogate"));
                                    }
                                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                                } else if (0xDC00..0xE000).contains(&hi) {
                                    return Err(self.err("lone surrogate"));
                                } else {
                                    hi
                                };
                                char::from_u32(code).ok_or_else(|| self.err("bad \\u escape"))?
                            }
                            _ => return Err(self.err("bad escape")),
                        };
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                    }
                    c if c < 0x20 => return Err(self.err("control character in string")),
                    c => out.push(c),
                }
            }
            // The input is a &str and escapes add whole characters: valid UTF-8.
            String::from_utf8(out).map_err(|_| self.err("invalid UTF-8"))
        }
    }
}

use json::Value;
use std::io::{Read, Write};

/// The ABI version these bindings speak: the request's and the manifest's
/// `"abi"`, and the `wasmtask_v1` import module.
pub const ABI_VERSION: i64 = 1;

#[link(wasm_import_module = "wasmtask_v1")]
extern "C" {
    #[link_name = "progress"]
    fn wt_progress(progress: f64, total: f64, msg: *const u8, msg_len: i32);
    #[link_name = "status"]
    fn wt_status(msg: *const u8, msg_len: i32);
    #[link_name = "log"]
    fn wt_log(level: i32, msg: *const u8, msg_len: i32);
    #[link_name = "elicit"]
    fn wt_elicit(req: *const u8, req_len: i32) -> i32;
    #[link_name = "reply"]
    fn wt_reply(buf: *mut u8, buf_cap: i32) -> i32;
}

/// The length of `s` as the ABI's i32. A message longer than 2 GiB cannot
/// be in a 32-bit memory, so the conversion only guards against misuse.
fn len32(s: &[u8]) -> i32 {
    i32::try_from(s.len()).unwrap_or(i32::MAX)
}

/// Reports how far the call got (`total` ≤ 0: unknown); `msg` may be empty.
/// The host turns it into an MCP progress notification when the client asked
/// for one.
pub fn progress(progress: f64, total: f64, msg: &str) {
    unsafe { wt_progress(progress, total, msg.as_ptr(), len32(msg.as_bytes())) }
}

/// Sets the call's short status (a task's statusMessage); "" clears it.
pub fn status(msg: &str) {
    unsafe { wt_status(msg.as_ptr(), len32(msg.as_bytes())) }
}

/// The level of a [`log`] line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Debug = 0,
    Info = 1,
    Warning = 2,
    Error = 3,
}

/// Writes a log line with a level to the host's log.
pub fn log(level: Level, msg: &str) {
    unsafe { wt_log(level as i32, msg.as_ptr(), len32(msg.as_bytes())) }
}

/// The user's answer to [`elicit`].
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// The user accepted; the content matches the requested schema.
    Accept(Value),
    Decline,
    Cancel,
}

/// Why [`elicit`] has no answer.
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitError {
    /// -1: nobody can answer now (no client capability, not a call that may
    /// ask, or disabled). Go on without, or fail the call.
    Unsupported,
    /// -2: the request is not the JSON shape ABI.md section 5 allows.
    BadRequest,
    /// -3: a limit on questions (the call's, the session's or the task's)
    /// refused this one. Go on without, or ask later.
    LimitReached,
    /// Another negative result, or a reply that is not the documented JSON.
    Other(String),
}

impl std::fmt::Display for ElicitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ElicitError::Unsupported => f.write_str("elicitation is not available"),
            ElicitError::BadRequest => f.write_str("the host refused the elicitation request"),
            ElicitError::LimitReached => f.write_str("too many questions: the limit on input requests was reached"),
            ElicitError::Other(why) => write!(f, "elicitation failed: {}", why),
        }
    }
}

/// Asks the user for input and blocks until they answer. `message` is shown
/// to them; `requested_schema` is the flat object schema of the answer, as
/// JSON text.
pub fn elicit(message: &str, requested_schema: &str) -> Result<Answer, ElicitError> {
    let req = format!(
        "{{\"message\":{},\"requestedSchema\":{}}}",
        json::quote(message),
        requested_schema
    );
    let n = unsafe { wt_elicit(req.as_ptr(), len32(req.as_bytes())) };
    match n {
        -1 => return Err(ElicitError::Unsupported),
        -2 => return Err(ElicitError::BadRequest),
        -3 => return Err(ElicitError::LimitReached),
        n if n < 0 => return Err(ElicitError::Other(format!("result {}", n))),
        _ => {}
    }
    let mut buf = vec![0u8; n as usize];
    let got = unsafe { wt_reply(buf.as_mut_ptr(), n) };
    if got != n {
        return Err(ElicitError::Other(format!(
            "reply: got {} bytes, want {}",
            got, n
        )));
    }
    let text =
        String::from_utf8(buf).map_err(|_| ElicitError::Other("reply is not UTF-8".into()))?;
    let reply = json::parse(&text).map_err(ElicitError::Other)?;
    match reply.get("action").and_then(Value::as_str) {
        Some("accept") => Ok(Answer::Accept(
            reply
                .get("content")
                .cloned()
                .unwrap_or(Value::Object(Vec::new())),
        )),
        Some("decline") => Ok(Answer::Decline),
        Some("cancel") => Ok(Answer::Cancel),
        _ => Err(ElicitError::Other(format!(
            "reply without a known action: {}",
            text
        ))),
    }
}

/// One request from the host.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// Write the manifest.
    Describe,
    /// Run `tool` with `arguments` (an object; `{}` when absent).
    Call { tool: String, arguments: Value },
}

impl Request {
    /// Reads all of stdin and decodes it as a request of ABI version 1.
    pub fn read() -> Result<Request, String> {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("reading the request: {}", e))?;
        Request::parse(&text)
    }

    /// Decodes a request; another `abi` than 1 is an error that says what
    /// to rebuild.
    pub fn parse(text: &str) -> Result<Request, String> {
        let v = json::parse(text).map_err(|e| format!("reading the request: {}", e))?;
        match v.get("abi").and_then(Value::as_i64) {
            Some(ABI_VERSION) => {}
            other => {
                return Err(format!(
                    "built for wasmtask ABI v{}, got a request for ABI {:?}: rebuild the tool for the host's ABI",
                    ABI_VERSION, other
                ))
            }
        }
        match v.get("method").and_then(Value::as_str) {
            Some("describe") => Ok(Request::Describe),
            Some("call") => {
                let tool = v
                    .get("tool")
                    .and_then(Value::as_str)
                    .ok_or("a call request without a tool")?;
                let arguments = match v.get("arguments") {
                    None | Some(Value::Null) => Value::Object(Vec::new()),
                    Some(a @ Value::Object(_)) => a.clone(),
                    Some(_) => return Err("the call's arguments are not an object".into()),
                };
                Ok(Request::Call {
                    tool: tool.to_string(),
                    arguments,
                })
            }
            other => Err(format!("unknown method {:?}", other)),
        }
    }
}

/// The answer to a call: an MCP CallToolResult with text content, optional
/// structured content, and the tool-error flag.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    pub text: String,
    /// JSON text of an object, or None.
    pub structured: Option<String>,
    pub is_error: bool,
}

impl ToolResult {
    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> ToolResult {
        ToolResult {
            text: text.into(),
            structured: None,
            is_error: false,
        }
    }

    /// A tool error (`isError: true`): the tool ran but failed; `why` is
    /// for the model to read.
    pub fn error(why: impl Into<String>) -> ToolResult {
        ToolResult {
            text: why.into(),
            structured: None,
            is_error: true,
        }
    }

    /// Adds structuredContent, the JSON text of an object.
    pub fn with_structured(mut self, object_json: impl Into<String>) -> ToolResult {
        self.structured = Some(object_json.into());
        self
    }

    /// The result as the JSON the host reads.
    pub fn to_json(&self) -> String {
        let mut out = format!(
            "{{\"content\":[{{\"type\":\"text\",\"text\":{}}}]",
            json::quote(&self.text)
        );
        if let Some(s) = &self.structured {
            out.push_str(",\"structuredContent\":");
            out.push_str(s);
        }
        if self.is_error {
            out.push_str(",\"isError\":true");
        }
        out.push('}');
        out
    }
}

/// Runs one request: reads it, writes `manifest` for describe or the
/// handler's result for a call, and exits. An unreadable request, or one
/// for another ABI version, exits 1 with the reason on stderr.
pub fn serve<F>(manifest: &str, handler: F) -> !
where
    F: FnOnce(&str, &Value) -> ToolResult,
{
    let answer = match Request::read() {
        Ok(Request::Describe) => manifest.to_string(),
        Ok(Request::Call { tool, arguments }) => handler(&tool, &arguments).to_json(),
        Err(why) => {
            eprintln!("{}", why);
            std::process::exit(1);
        }
    };
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(answer.as_bytes()).and_then(|_| out.flush()) {
        eprintln!("writing the answer: {}", e);
        std::process::exit(1);
    }
    std::process::exit(0)
}
