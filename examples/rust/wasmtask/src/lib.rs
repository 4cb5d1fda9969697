//! Bindings for the wasmtask tool ABI, version 1 (abi/ABI.md in the wasmtask
//! repository), for Rust tools built as WASI preview1 commands
//! (`--target wasm32-wasi`, a `bin` crate: the host runs `_start`).
//!
//! What it owns: reading the one request from stdin ([`Request::read`]),
//! writing the one answer to stdout ([`serve`], [`ToolResult`]), the
//! optional `wasmtask_v1` host functions behind safe wrappers ([`progress`],
//! [`status`], [`log`], [`elicit`]), and a minimal JSON reader and writer
//! ([`json`]). It has no dependency, so it builds offline.
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

pub mod json;

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
