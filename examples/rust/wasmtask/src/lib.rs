//! Bindings for the wasmtask tool ABI, version 1 (abi/ABI.md in the wasmtask
//! repository), for Rust tools built as WASI preview1 commands
//! (`--target wasm32-wasi`, a `bin` crate: the host runs `_start`).
//!
//! What it owns: reading the one request from stdin ([`Request::read`]),
//! writing the one answer to stdout ([`serve`], [`Module`], [`ToolResult`]),
//! the resources and prompts of ABI 1.2 ([`ReadRequest`], [`PromptRequest`],
//! [`ResourceContents`], [`PromptResult`], [`ProtocolError`]), the
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
//!
//! A module that also serves resources and prompts (ABI 1.2: its manifest
//! says `"revision":2` and declares them) gives [`Module`] a handler for
//! each kind of request:
//!
//! ```no_run
//! use wasmtask::{json::Value, Module, PromptMessage, PromptResult, ProtocolError, ResourceContents, ToolResult};
//!
//! const MANIFEST: &str = r#"{"abi":1,"revision":2,
//!   "tools":[{"name":"hello","inputSchema":{"type":"object"}}],
//!   "resources":[{"uri":"hello://readme","name":"readme","mimeType":"text/plain"}],
//!   "prompts":[{"name":"greet","arguments":[{"name":"who","required":true}]}]}"#;
//!
//! fn main() {
//!     Module::new(MANIFEST)
//!         .tools(|_tool: &str, _args: &Value| ToolResult::text("Hello from Rust!"))
//!         .resources(|r| match r.uri.as_str() {
//!             "hello://readme" => Ok(vec![ResourceContents::text(&r.uri, "text/plain", "Say hello.")]),
//!             _ => Err(ProtocolError::not_found("no such resource")),
//!         })
//!         .prompts(|p| {
//!             let who = p.argument("who").unwrap_or("world");
//!             Ok(PromptResult::new(vec![PromptMessage::user(format!("Greet {}.", who))]))
//!         })
//!         .serve()
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
            ElicitError::LimitReached => {
                f.write_str("too many questions: the limit on input requests was reached")
            }
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
    /// Read a resource (ABI 1.2; only a module whose manifest declares
    /// resources or resource templates gets it).
    Read(ReadRequest),
    /// Render a prompt (ABI 1.2; only a module whose manifest declares
    /// prompts gets it).
    Prompt(PromptRequest),
}

/// A `read` request: the resource's URI, and when it matched one of the
/// manifest's resource templates, that template and the values of its
/// variables (percent-decoded by the host; a variable the URI leaves out is
/// absent).
#[derive(Clone, Debug, PartialEq)]
pub struct ReadRequest {
    pub uri: String,
    pub template: Option<String>,
    /// An object of strings; `{}` for a declared resource.
    pub variables: Value,
}

impl ReadRequest {
    /// The value of the template's variable `name`, or None.
    pub fn variable(&self, name: &str) -> Option<&str> {
        self.variables.get(name).and_then(Value::as_str)
    }
}

/// A `prompt` request: the prompt's name and its arguments. The host has
/// checked that every argument the manifest marks required is there.
#[derive(Clone, Debug, PartialEq)]
pub struct PromptRequest {
    pub name: String,
    /// An object of strings; `{}` when there are none.
    pub arguments: Value,
}

impl PromptRequest {
    /// The argument `name`, or None.
    pub fn argument(&self, name: &str) -> Option<&str> {
        self.arguments.get(name).and_then(Value::as_str)
    }
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
            Some("read") => {
                let uri = v
                    .get("uri")
                    .and_then(Value::as_str)
                    .ok_or("a read request without a uri")?;
                Ok(Request::Read(ReadRequest {
                    uri: uri.to_string(),
                    template: v
                        .get("template")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    variables: strings(v.get("variables"), "the read's variables")?,
                }))
            }
            Some("prompt") => {
                let name = v
                    .get("prompt")
                    .and_then(Value::as_str)
                    .ok_or("a prompt request without a prompt")?;
                Ok(Request::Prompt(PromptRequest {
                    name: name.to_string(),
                    arguments: strings(v.get("arguments"), "the prompt's arguments")?,
                }))
            }
            other => Err(format!("unknown method {:?}", other)),
        }
    }
}

/// `v` when it is an object of strings, `{}` when it is absent; an error
/// naming `what` otherwise.
fn strings(v: Option<&Value>, what: &str) -> Result<Value, String> {
    match v {
        None | Some(Value::Null) => Ok(Value::Object(Vec::new())),
        Some(o @ Value::Object(members)) if members.iter().all(|(_, v)| v.as_str().is_some()) => {
            Ok(o.clone())
        }
        Some(_) => Err(format!("{} are not an object of strings", what)),
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

/// A protocol error as a request's answer (ABI.md section 12): the client
/// gets this JSON-RPC error instead of a result. A read answers
/// [`ProtocolError::not_found`] for a resource that does not exist.
#[derive(Clone, Debug, PartialEq)]
pub struct ProtocolError {
    /// -32602 (invalid params), -32603 (internal error), -32002 (resource
    /// not found, for a read), or an application code outside
    /// -32768..-32000.
    pub code: i64,
    /// One line, at most 1024 bytes.
    pub message: String,
}

impl ProtocolError {
    pub fn new(code: i64, message: impl Into<String>) -> ProtocolError {
        ProtocolError {
            code,
            message: message.into(),
        }
    }

    /// The resource a read asks for does not exist (-32002).
    pub fn not_found(message: impl Into<String>) -> ProtocolError {
        ProtocolError::new(-32002, message)
    }

    /// The request's arguments or variables are not ones the module serves
    /// (-32602).
    pub fn invalid_params(message: impl Into<String>) -> ProtocolError {
        ProtocolError::new(-32602, message)
    }

    pub fn to_json(&self) -> String {
        format!(
            "{{\"error\":{{\"code\":{},\"message\":{}}}}}",
            self.code,
            json::quote(&self.message)
        )
    }
}

/// One part of a resource a read answers: its URI, media type and text.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceContents {
    pub uri: String,
    /// "" for none.
    pub mime_type: String,
    pub text: String,
}

impl ResourceContents {
    pub fn text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> ResourceContents {
        ResourceContents {
            uri: uri.into(),
            mime_type: mime_type.into(),
            text: text.into(),
        }
    }

    fn to_json(&self) -> String {
        let mut out = format!("{{\"uri\":{}", json::quote(&self.uri));
        if !self.mime_type.is_empty() {
            out.push_str(",\"mimeType\":");
            out.push_str(&json::quote(&self.mime_type));
        }
        out.push_str(",\"text\":");
        out.push_str(&json::quote(&self.text));
        out.push('}');
        out
    }
}

/// Who says a prompt's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

/// One message of a prompt, with one text block.
#[derive(Clone, Debug, PartialEq)]
pub struct PromptMessage {
    pub role: Role,
    pub text: String,
}

impl PromptMessage {
    pub fn user(text: impl Into<String>) -> PromptMessage {
        PromptMessage {
            role: Role::User,
            text: text.into(),
        }
    }

    pub fn assistant(text: impl Into<String>) -> PromptMessage {
        PromptMessage {
            role: Role::Assistant,
            text: text.into(),
        }
    }
}

/// The answer to a prompt request: its messages and an optional
/// description.
#[derive(Clone, Debug, PartialEq)]
pub struct PromptResult {
    /// "" for none.
    pub description: String,
    pub messages: Vec<PromptMessage>,
}

impl PromptResult {
    pub fn new(messages: Vec<PromptMessage>) -> PromptResult {
        PromptResult {
            description: String::new(),
            messages,
        }
    }

    pub fn with_description(mut self, description: impl Into<String>) -> PromptResult {
        self.description = description.into();
        self
    }

    pub fn to_json(&self) -> String {
        let mut out = String::from("{");
        if !self.description.is_empty() {
            out.push_str("\"description\":");
            out.push_str(&json::quote(&self.description));
            out.push(',');
        }
        out.push_str("\"messages\":[");
        for (i, m) in self.messages.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            out.push_str(&format!(
                "{{\"role\":\"{}\",\"content\":{{\"type\":\"text\",\"text\":{}}}}}",
                role,
                json::quote(&m.text)
            ));
        }
        out.push_str("]}");
        out
    }
}

/// What a read handler answers: the resource's contents, or a protocol
/// error (not found, most often).
pub type ReadResult = Result<Vec<ResourceContents>, ProtocolError>;

type CallHandler<'a> = Box<dyn FnOnce(&str, &Value) -> ToolResult + 'a>;
type ReadHandler<'a> = Box<dyn FnOnce(&ReadRequest) -> ReadResult + 'a>;
type PromptHandler<'a> =
    Box<dyn FnOnce(&PromptRequest) -> Result<PromptResult, ProtocolError> + 'a>;

/// A module's manifest and the handlers of its requests: [`Module::tools`]
/// for calls, [`Module::resources`] for reads of its resources and resource
/// templates, [`Module::prompts`] for its prompts (both ABI 1.2). A request
/// without a handler is answered with a protocol error, which the host
/// reports; it sends only requests for what the manifest declares.
pub struct Module<'a> {
    manifest: &'a str,
    call: Option<CallHandler<'a>>,
    read: Option<ReadHandler<'a>>,
    prompt: Option<PromptHandler<'a>>,
}

impl<'a> Module<'a> {
    pub fn new(manifest: &'a str) -> Module<'a> {
        Module {
            manifest,
            call: None,
            read: None,
            prompt: None,
        }
    }

    /// Sets the handler of calls: the tool's name and its arguments.
    pub fn tools(mut self, handler: impl FnOnce(&str, &Value) -> ToolResult + 'a) -> Module<'a> {
        self.call = Some(Box::new(handler));
        self
    }

    /// Sets the handler of reads (ABI 1.2).
    pub fn resources(
        mut self,
        handler: impl FnOnce(&ReadRequest) -> ReadResult + 'a,
    ) -> Module<'a> {
        self.read = Some(Box::new(handler));
        self
    }

    /// Sets the handler of prompt requests (ABI 1.2).
    pub fn prompts(
        mut self,
        handler: impl FnOnce(&PromptRequest) -> Result<PromptResult, ProtocolError> + 'a,
    ) -> Module<'a> {
        self.prompt = Some(Box::new(handler));
        self
    }

    /// The answer to `req`, as the JSON the host reads.
    pub fn answer(self, req: Request) -> String {
        let missing = |what: &str| {
            ProtocolError::new(-32603, format!("this module serves no {}", what)).to_json()
        };
        match req {
            Request::Describe => self.manifest.to_string(),
            Request::Call { tool, arguments } => match self.call {
                Some(h) => h(&tool, &arguments).to_json(),
                None => {
                    ToolResult::error(format!("this module has no tool {}", json::quote(&tool)))
                        .to_json()
                }
            },
            Request::Read(r) => match self.read {
                Some(h) => match h(&r) {
                    Ok(parts) => {
                        let parts: Vec<String> =
                            parts.iter().map(ResourceContents::to_json).collect();
                        format!("{{\"contents\":[{}]}}", parts.join(","))
                    }
                    Err(e) => e.to_json(),
                },
                None => missing("resources"),
            },
            Request::Prompt(p) => match self.prompt {
                Some(h) => match h(&p) {
                    Ok(r) => r.to_json(),
                    Err(e) => e.to_json(),
                },
                None => missing("prompts"),
            },
        }
    }

    /// Runs one request: reads it, writes its answer, and exits. An
    /// unreadable request, or one for another ABI version, exits 1 with
    /// the reason on stderr.
    pub fn serve(self) -> ! {
        let answer = match Request::read() {
            Ok(req) => self.answer(req),
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
}

/// Runs one request of a module that serves tools only: reads it, writes
/// `manifest` for describe or the handler's result for a call, and exits.
/// An unreadable request, or one for another ABI version, exits 1 with the
/// reason on stderr. The same as `Module::new(manifest).tools(handler).serve()`.
pub fn serve<F>(manifest: &str, handler: F) -> !
where
    F: FnOnce(&str, &Value) -> ToolResult,
{
    Module::new(manifest).tools(handler).serve()
}
