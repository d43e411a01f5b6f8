//! The stdio transport of `squad mcp`: newline-delimited JSON-RPC on stdin and stdout.
//!
//! rmcp's own stdio transport drops a line that is not JSON without an answer, and ends the
//! session when the first message is not `initialize`. This one answers every bad line a client
//! can be told about and never stops before the end of input:
//!
//! - a line that is not JSON: `-32700` (parse error), id `null`;
//! - a batch (a JSON array; MCP has none since 2025-06-18) or JSON that is not a request, a
//!   notification or a response: `-32600` (invalid request), with the request's id when it has
//!   a usable one (a string or an integer);
//! - a known method whose parameters do not fit: `-32602` (invalid params), with its id;
//! - a line longer than [`MAX_LINE_BYTES`]: `-32600`, id `null`, and the line is skipped;
//! - before the session is initialized, a request other than `initialize` or `ping` gets
//!   `-32600` (notifications and responses are dropped, as JSON-RPC wants for notifications).
//!
//! A malformed notification gets no answer (JSON-RPC never answers a notification), nor does a
//! malformed response. Writes go to stdout whole, one message per line, flushed.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::ClientRequest;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest line read (16 MiB): a tool call carries at most a note entry or a memory body.
pub(crate) const MAX_LINE_BYTES: usize = 16 << 20;

/// JSON-RPC error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;
const METHOD_NOT_FOUND: i64 = -32601;

/// The methods whose parameters rmcp checks: a line naming one that does not parse is
/// answered with invalid params rather than invalid request.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
];

/// Newline-delimited JSON-RPC over a reader and a writer (stdin and stdout for `squad mcp`).
pub(crate) struct LineTransport<R, W> {
    reader: BufReader<R>,
    writer: Arc<Mutex<W>>,
    /// The current line so far: a read cut short (the service polls `receive` in a `select!`)
    /// resumes where it stopped.
    line: Vec<u8>,
    /// Skipping the rest of an over-long line.
    skipping: bool,
    /// An `initialize` request was passed on.
    initialized: bool,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading `reader` and writing `writer`.
    pub(crate) fn new(reader: R, writer: W) -> Self {
        Self {
            reader: BufReader::new(reader),
            writer: Arc::new(Mutex::new(writer)),
            line: Vec::new(),
            skipping: false,
            initialized: false,
        }
    }

    /// Reads the next whole line into `self.line` (without its end); `false` at the end of
    /// input or on a read error.
    async fn next_line(&mut self) -> Option<LineRead> {
        loop {
            let room = (MAX_LINE_BYTES + 1).saturating_sub(self.line.len());
            let read = (&mut self.reader)
                .take(room as u64)
                .read_until(b'\n', &mut self.line)
                .await;
            let n = match read {
                Ok(n) => n,
                Err(_) => return None,
            };
            let complete = self.line.last() == Some(&b'\n');
            if n == 0 && !complete {
                // End of input: a last line without a newline still counts.
                if self.line.is_empty() || self.skipping {
                    return None;
                }
                return Some(LineRead::Line);
            }
            if complete {
                self.line.pop();
                if self.line.last() == Some(&b'\r') {
                    self.line.pop();
                }
                if std::mem::take(&mut self.skipping) {
                    self.line.clear();
                    continue;
                }
                return Some(LineRead::Line);
            }
            if self.line.len() > MAX_LINE_BYTES {
                self.line.clear();
                if !std::mem::replace(&mut self.skipping, true) {
                    return Some(LineRead::TooLong);
                }
            }
        }
    }

    /// What to do with one line: pass a message on, or answer it here.
    fn judge(&mut self, line: &[u8]) -> Judged {
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return Judged::Skip;
        }
        let value: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => {
                return Judged::Answer(Value::Null, PARSE_ERROR, format!("parse error: {e}"));
            }
        };
        let Value::Object(object) = &value else {
            let what = if value.is_array() {
                "batches are not supported; send one message per line"
            } else {
                "a message must be a JSON object"
            };
            return Judged::Answer(
                Value::Null,
                INVALID_REQUEST,
                format!("invalid request: {what}"),
            );
        };
        let id = object
            .get("id")
            .filter(|id| id.is_string() || id.is_i64() || id.is_u64())
            .cloned();
        let method = object.get("method").and_then(Value::as_str);
        let is_response =
            method.is_none() && (object.contains_key("result") || object.contains_key("error"));
        match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value.clone()) {
            Ok(rmcp::model::JsonRpcMessage::Request(r))
                if matches!(r.request, ClientRequest::CustomRequest(_)) =>
            {
                // rmcp reads a known method whose params do not fit as a custom request.
                let id = id.unwrap_or(Value::Null);
                let m = method.unwrap_or_default();
                if KNOWN_METHODS.contains(&m) {
                    let why = params_problem(m, object.get("params"));
                    Judged::Answer(id, INVALID_PARAMS, format!("invalid params for {m}: {why}"))
                } else {
                    Judged::Answer(id, METHOD_NOT_FOUND, format!("method not found: {m}"))
                }
            }
            Ok(message) => self.before_initialize(message, id),
            Err(e) => match (id, method) {
                // A notification (a method and no id at all) or a response that does not parse:
                // nobody to answer.
                (None, Some(_)) if !object.contains_key("id") => Judged::Skip,
                _ if is_response => Judged::Skip,
                (Some(id), Some(m)) if KNOWN_METHODS.contains(&m) && version_ok(object) => {
                    Judged::Answer(id, INVALID_PARAMS, format!("invalid params for {m}: {e}"))
                }
                (id, _) => Judged::Answer(
                    id.unwrap_or(Value::Null),
                    INVALID_REQUEST,
                    format!("invalid request: {e}"),
                ),
            },
        }
    }

    /// Before `initialize`, only `initialize` and `ping` requests go on.
    fn before_initialize(
        &mut self,
        message: RxJsonRpcMessage<RoleServer>,
        id: Option<Value>,
    ) -> Judged {
        if self.initialized {
            return Judged::Pass(Box::new(message));
        }
        match &message {
            rmcp::model::JsonRpcMessage::Request(r) => match &r.request {
                ClientRequest::InitializeRequest(_) => {
                    self.initialized = true;
                    Judged::Pass(Box::new(message))
                }
                ClientRequest::PingRequest(_) => Judged::Pass(Box::new(message)),
                _ => Judged::Answer(
                    id.unwrap_or(Value::Null),
                    INVALID_REQUEST,
                    "the session is not initialized: send initialize first".to_owned(),
                ),
            },
            _ => Judged::Skip,
        }
    }
}

/// What is wrong with the params of a known method.
fn params_problem(method: &str, params: Option<&Value>) -> String {
    use rmcp::model::{CallToolRequestParams, InitializeRequestParams, ReadResourceRequestParams};
    let params = params.cloned().unwrap_or(Value::Null);
    let problem = match method {
        "tools/call" => serde_json::from_value::<CallToolRequestParams>(params).err(),
        "initialize" => serde_json::from_value::<InitializeRequestParams>(params).err(),
        "resources/read" => serde_json::from_value::<ReadResourceRequestParams>(params).err(),
        _ => None,
    };
    problem.map_or_else(
        || "they do not match the method's parameters".to_owned(),
        |e| e.to_string(),
    )
}

/// `"jsonrpc": "2.0"` is there.
fn version_ok(object: &serde_json::Map<String, Value>) -> bool {
    object.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
}

enum LineRead {
    Line,
    TooLong,
}

enum Judged {
    Pass(Box<RxJsonRpcMessage<RoleServer>>),
    Answer(Value, i64, String),
    Skip,
}

async fn write_line<W: AsyncWrite + Unpin>(
    writer: &Mutex<W>,
    mut text: String,
) -> std::io::Result<()> {
    text.push('\n');
    let mut w = writer.lock().await;
    w.write_all(text.as_bytes()).await?;
    w.flush().await
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn name() -> Cow<'static, str> {
        "stdio".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        async move {
            let text = serde_json::to_string(&item).map_err(std::io::Error::other)?;
            write_line(&writer, text).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let read = self.next_line().await?;
            let line = std::mem::take(&mut self.line);
            let judged = match read {
                LineRead::TooLong => Judged::Answer(
                    Value::Null,
                    INVALID_REQUEST,
                    format!("invalid request: the line is longer than {MAX_LINE_BYTES} bytes"),
                ),
                LineRead::Line => self.judge(&line),
            };
            // Keep the buffer's capacity for the next line.
            self.line = line;
            self.line.clear();
            match judged {
                Judged::Pass(message) => return Some(*message),
                Judged::Skip => {}
                Judged::Answer(id, code, message) => {
                    let body = json!({
                        "jsonrpc": "2.0",
                        "id": id,
                        "error": {"code": code, "message": message},
                    });
                    let writer = self.writer.clone();
                    if write_line(&writer, body.to_string()).await.is_err() {
                        return None;
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.flush().await
    }
}
