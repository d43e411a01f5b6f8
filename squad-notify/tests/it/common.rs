//! Shared helpers: a fixed clock, sample requests, signals, and a tiny real HTTP server.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use squad_model::ChannelKind;
use squad_notify::*;

/// The paths of the state files, for tests that look at the files themselves.
pub(crate) trait Paths {
    fn state_path(&self) -> std::path::PathBuf;
    fn log_path(&self) -> std::path::PathBuf;
}

impl Paths for StateDir {
    fn state_path(&self) -> std::path::PathBuf {
        self.display_path(squad_notify::store::STATE_FILE)
    }
    fn log_path(&self) -> std::path::PathBuf {
        self.display_path(squad_notify::store::LOG_FILE)
    }
}

pub(crate) fn clock() -> Arc<FixedClock> {
    Arc::new(FixedClock::at_unix_seconds(1_800_000_000))
}

pub(crate) fn request(mode: Mode, trigger: Trigger) -> GateRequest {
    GateRequest {
        mode,
        trigger,
        topic: "Deploy the staging migration".into(),
        awaiting: "approve the migration".into(),
        detail: "Schema change on orders.\nRollback script ready.".into(),
    }
}

pub(crate) fn signal(
    login: &str,
    id: Option<u64>,
    bot: bool,
    source: ChannelKind,
    text: &str,
) -> Signal {
    Signal {
        responder: Responder {
            login: login.into(),
            id,
            bot,
        },
        at: squad_model::Timestamp::from_unix_seconds(1_800_000_001).unwrap(),
        source,
        body: SignalBody::Text(text.into()),
        reference: Some("comment-1".into()),
    }
}

pub(crate) fn gh(login: &str, id: u64, text: &str) -> Signal {
    signal(login, Some(id), false, ChannelKind::GithubIssue, text)
}

pub(crate) struct Env {
    pub(crate) _tmp: tempfile::TempDir,
    pub(crate) clock: Arc<FixedClock>,
    pub(crate) approvals: Approvals,
    pub(crate) phone: Arc<InMemoryChannel>,
    pub(crate) channels: FanOut,
}

pub(crate) fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let clock = clock();
    let approvals = Approvals::new(StateDir::new(tmp.path().join(".squad")), clock.clone());
    let phone = Arc::new(InMemoryChannel::new(ChannelKind::GithubIssue));
    let channels = FanOut::new().with(phone.clone());
    Env {
        _tmp: tmp,
        clock,
        approvals,
        phone,
        channels,
    }
}

impl Env {
    pub(crate) async fn open(&self, mode: Mode, trigger: Trigger) -> Gate {
        match self
            .approvals
            .request(&request(mode, trigger), None, 3600, &self.channels)
            .await
            .unwrap()
        {
            RequestOutcome::Opened { gate, .. } => gate,
            other => panic!("expected a gate, got {other:?}"),
        }
    }

    /// A gate request (60-second expiry, no run id) that must be refused: the error.
    pub(crate) async fn refused(&self, mode: Mode, trigger: Trigger) -> Error {
        self.approvals
            .request(&request(mode, trigger), None, 60, &self.channels)
            .await
            .unwrap_err()
    }

    pub(crate) async fn consume(
        &self,
        signals: &[Signal],
        rules: &ApproverRules,
        auth: &StaticAuthorizer,
    ) -> Consumed {
        self.approvals.consume(signals, rules, auth).await.unwrap()
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.approvals.dir().log_path()).unwrap()
    }
}

pub(crate) fn rules() -> ApproverRules {
    ApproverRules {
        approver: Some(Identity {
            login: "octocat".into(),
            id: Some(583231),
        }),
        own_identities: vec![Identity {
            login: "squad-bot-account".into(),
            id: Some(777),
        }],
    }
}

/// One request the test server received.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) headers: HashMap<String, String>,
    pub(crate) body: Vec<u8>,
}

/// How the test server answers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Behavior {
    Status(u16),
    /// Sleep this long before answering 200 (longer than the client's timeout).
    Slow(Duration),
}

/// A real HTTP/1.1 server on 127.0.0.1 (one thread per connection, `Connection: close`).
pub(crate) struct HttpServer {
    pub(crate) addr: SocketAddr,
    pub(crate) received: Arc<Mutex<Vec<Received>>>,
}

impl HttpServer {
    pub(crate) fn start(behavior: Behavior) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let rec = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let rec = rec.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut parts = line.split_whitespace();
                    let method = parts.next().unwrap_or_default().to_owned();
                    let path = parts.next().unwrap_or_default().to_owned();
                    let mut headers = HashMap::new();
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':') {
                            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
                        }
                    }
                    let len: usize = headers
                        .get("content-length")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    let mut body = vec![0; len];
                    reader.read_exact(&mut body).unwrap();
                    rec.lock().unwrap().push(Received {
                        method,
                        path,
                        headers,
                        body,
                    });
                    let status = match behavior {
                        Behavior::Status(s) => s,
                        Behavior::Slow(d) => {
                            std::thread::sleep(d);
                            200
                        }
                    };
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {status} X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
                    );
                });
            }
        });
        Self { addr, received }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub(crate) fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

/// The error's message followed by its chain of sources: what a host printing the whole chain
/// shows.
pub(crate) fn with_sources(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
