//! wordfreq: a wasmtask tool module in Rust on the `wasmtask` bindings.
//!
//! - `top_words` counts the words of a text (runs of letters and digits,
//!   lowercased) and returns the `n` most frequent, most frequent first and
//!   in UTF-8 byte order among equals. It reports progress every 256 KiB and at
//!   the end, and logs how many distinct words it saw.
//! - `greet` greets `name`, or asks the user for a name (elicitation) when
//!   none is given.
//! - The resource `wordfreq://about` (ABI 1.2) says how words are counted.
//! - The prompt `themes` (ABI 1.2) asks the model which themes the most
//!   frequent words of `text` suggest, counted as `top_words` counts them.
//!
//! Build: cargo build --offline --locked --release --target wasm32-wasi (in
//! examples/rust); the module is target/wasm32-wasi/release/wordfreq.wasm.

use std::collections::HashMap;
use wasmtask::json::{quote, Value};
use wasmtask::{
    Answer, ElicitError, Level, Module, PromptMessage, PromptRequest, PromptResult, ProtocolError,
    ReadRequest, ReadResult, ResourceContents, ToolResult,
};

const MANIFEST: &str = r#"{"abi":1,"revision":2,"name":"wordfreq","tools":[
{"name":"top_words","title":"Top words",
 "description":"The n most frequent words of a text (runs of letters and digits, lowercased), most frequent first.",
 "inputSchema":{"type":"object","properties":{
   "text":{"type":"string"},
   "n":{"type":"integer","minimum":1,"maximum":1000}},
  "required":["text"]},
 "outputSchema":{"type":"object","properties":{
   "words":{"type":"array","items":{"type":"object","properties":{
     "word":{"type":"string"},"count":{"type":"integer"}},"required":["word","count"]}},
   "distinct":{"type":"integer"}},"required":["words","distinct"]},
 "annotations":{"readOnlyHint":true,"openWorldHint":false},
 "cache":{"cacheable":true}},
{"name":"greet","title":"Greet",
 "description":"Greets name; without a name, asks the user for one.",
 "inputSchema":{"type":"object","properties":{"name":{"type":"string","minLength":1}}},
 "taskSupport":"optional"}
],
"resources":[
{"uri":"wordfreq://about","name":"about","title":"How wordfreq counts words","mimeType":"text/markdown"}
],
"prompts":[
{"name":"themes","title":"Themes of a text",
 "description":"Asks which themes the most frequent words of a text suggest.",
 "arguments":[{"name":"text","description":"the text","required":true},
  {"name":"n","description":"how many words, 1 to 1000 (default 10)"}]}
]}"#;

/// The text of the resource wordfreq://about.
const ABOUT: &str = "# wordfreq\n\nA word is a run of letters and digits, lowercased. \
top_words ranks words by count, most frequent first, and in UTF-8 byte order among equals.\n";

fn main() {
    Module::new(MANIFEST)
        .tools(|tool: &str, args: &Value| match tool {
            "top_words" => top_words(args),
            "greet" => greet(args),
            _ => ToolResult::error(format!("unknown tool {}", quote(tool))),
        })
        .resources(read)
        .prompts(themes)
        .serve()
}

fn read(r: &ReadRequest) -> ReadResult {
    match r.uri.as_str() {
        "wordfreq://about" => Ok(vec![ResourceContents::text(&r.uri, "text/markdown", ABOUT)]),
        _ => Err(ProtocolError::not_found(format!("no resource {}", r.uri))),
    }
}

fn themes(p: &PromptRequest) -> Result<PromptResult, ProtocolError> {
    let text = p.argument("text").unwrap_or("");
    let n = match p.argument("n") {
        None => 10,
        Some(n) => match n.parse::<usize>() {
            Ok(n) if (1..=1000).contains(&n) => n,
            _ => {
                return Err(ProtocolError::invalid_params(
                    "n must be an integer from 1 to 1000",
                ))
            }
        },
    };
    let ranked = rank(count(text, |_| {}), n);
    if ranked.is_empty() {
        return Err(ProtocolError::invalid_params("the text has no words"));
    }
    let words: Vec<String> = ranked
        .iter()
        .map(|(w, c)| format!("{} ({})", w, c))
        .collect();
    Ok(PromptResult::new(vec![PromptMessage::user(format!(
        "The most frequent words of a text are: {}. Which themes do they suggest?",
        words.join(", ")
    ))])
    .with_description(format!(
        "Themes of the {} most frequent words",
        ranked.len()
    )))
}

/// Progress is reported every REPORT_EVERY bytes of text and at the end.
const REPORT_EVERY: usize = 256 << 10;

fn top_words(args: &Value) -> ToolResult {
    let text = match args.get("text").and_then(Value::as_str) {
        Some(t) => t,
        None => return ToolResult::error("top_words needs a string text"),
    };
    let n = match args.get("n") {
        None => 10,
        Some(v) => match v.as_i64() {
            Some(n) if (1..=1000).contains(&n) => n as usize,
            _ => return ToolResult::error("n must be an integer from 1 to 1000"),
        },
    };

    let report = |i: usize| {
        wasmtask::progress(
            i as f64,
            text.len() as f64,
            &format!("read {} of {} bytes", i, text.len()),
        )
    };
    let counts = count(text, report);
    report(text.len());
    wasmtask::log(Level::Info, &format!("{} distinct words", counts.len()));

    let distinct = counts.len();
    let ranked = rank(counts, n);

    let text_lines: Vec<String> = ranked.iter().map(|(w, c)| format!("{} {}", w, c)).collect();
    let words: Vec<Value> = ranked
        .iter()
        .map(|(w, c)| {
            Value::Object(vec![
                ("word".to_string(), Value::String(w.clone())),
                ("count".to_string(), Value::Number(c.to_string())),
            ])
        })
        .collect();
    let structured = Value::Object(vec![
        ("words".to_string(), Value::Array(words)),
        ("distinct".to_string(), Value::Number(distinct.to_string())),
    ]);
    ToolResult::text(text_lines.join("\n")).with_structured(structured.to_json())
}

/// Counts the words of text, calling report with the byte offset every
/// REPORT_EVERY bytes.
fn count(text: &str, mut report: impl FnMut(usize)) -> HashMap<String, u64> {
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut word = String::new();
    let mut next_report = REPORT_EVERY;
    for (i, c) in text.char_indices() {
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            *counts.entry(std::mem::take(&mut word)).or_insert(0) += 1;
        }
        if i >= next_report {
            report(i);
            next_report += REPORT_EVERY;
        }
    }
    if !word.is_empty() {
        *counts.entry(word).or_insert(0) += 1;
    }
    counts
}

/// The n most frequent words, most frequent first, in UTF-8 byte order
/// among equals.
fn rank(counts: HashMap<String, u64>, n: usize) -> Vec<(String, u64)> {
    let mut ranked: Vec<(String, u64)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    ranked.truncate(n);
    ranked
}

fn greet(args: &Value) -> ToolResult {
    if let Some(name) = args.get("name").and_then(Value::as_str) {
        return ToolResult::text(format!("Hello, {}!", name));
    }
    let schema = r#"{"type":"object","properties":{"name":{"type":"string","title":"Your name","minLength":1}},"required":["name"]}"#;
    match wasmtask::elicit("What is your name?", schema) {
        Ok(Answer::Accept(content)) => match content.get("name").and_then(Value::as_str) {
            Some(name) => ToolResult::text(format!("Hello, {}!", name)),
            None => ToolResult::error("the answer has no name"),
        },
        Ok(Answer::Decline) | Ok(Answer::Cancel) => {
            ToolResult::error("no name: the user did not answer")
        }
        Err(ElicitError::Unsupported) => {
            ToolResult::error("no name given, and nobody can answer the question")
        }
        Err(e) => ToolResult::error(e.to_string()),
    }
}
