//! `squad approval`: the CLI contract end to end, with the in-chat channel on stdin, a webhook to a
//! real HTTP server on 127.0.0.1, and canary secrets in every spawned process's environment.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// Canary secrets: set in the environment of every `squad` process these tests start; none may
/// ever appear in a file, stdout or stderr.
const CANARY_TOKEN: &str = "ghp_CANARYtoken0000000000000000000000";
const CANARY_SECRET: &str = "CANARY-webhook-secret-51c9";
const CANARY_PATH: &str = "/services/T0/B0/CANARY-hook-path-93ab";
const CANARIES: [&str; 4] = [CANARY_TOKEN, CANARY_SECRET, "CANARY-hook-path", "CANARY"];

struct Fixture {
    tmp: tempfile::TempDir,
    env: HashMap<String, String>,
    outputs: Mutex<Vec<String>>,
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Fixture {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let mut env = HashMap::new();
        env.insert("GITHUB_TOKEN".into(), CANARY_TOKEN.into());
        env.insert("GH_TOKEN".into(), CANARY_TOKEN.into());
        env.insert("SQUAD_WEBHOOK_SECRET".into(), CANARY_SECRET.into());
        // A canary URL on a port where nothing listens (discard): any send fails fast.
        env.insert(
            "SQUAD_WEBHOOK_URL".into(),
            format!("http://127.0.0.1:9{CANARY_PATH}"),
        );
        env.insert("SQUAD_WEBHOOK_RETRIES".into(), "1".into());
        env.insert("SQUAD_WEBHOOK_TIMEOUT_MS".into(), "2000".into());
        env.insert("HOME".into(), tmp.path().display().to_string());
        // Every command logs at the most verbose level: no secret may reach a log line either.
        env.insert("RUST_LOG".into(), "trace".into());
        Self {
            tmp,
            env,
            outputs: Mutex::new(Vec::new()),
        }
    }

    fn state_dir(&self) -> PathBuf {
        self.tmp.path().join("state")
    }

    fn squad(&self, args: &[&str], stdin: Option<&str>) -> Out {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_squad"));
        cmd.arg("-C")
            .arg(self.tmp.path())
            .arg("--state-dir")
            .arg("state")
            .args(args)
            .envs(&self.env)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            });
        let mut child = cmd.spawn().unwrap();
        if let Some(input) = stdin {
            let mut pipe = child.stdin.take().unwrap();
            // The command may finish before reading its input (no gate): a closed pipe is fine.
            let _ = pipe.write_all(input.as_bytes());
        }
        let out: Output = child.wait_with_output().unwrap();
        self.record(out)
    }

    fn record(&self, out: Output) -> Out {
        let o = Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        };
        for c in CANARIES {
            assert!(!o.stdout.contains(c), "stdout leaks a canary: {}", o.stdout);
            assert!(!o.stderr.contains(c), "stderr leaks a canary: {}", o.stderr);
        }
        self.outputs
            .lock()
            .unwrap()
            .push(format!("{}{}", o.stdout, o.stderr));
        o
    }

    fn request(&self, mode: &str, trigger: &str, extra: &[&str]) -> Out {
        let mut args = vec![
            "approval",
            "request",
            "--mode",
            mode,
            "--trigger",
            trigger,
            "--topic",
            "Deploy to staging",
            "--awaiting",
            "approve the deploy",
            "--detail",
            "Migrations ready.",
        ];
        args.extend_from_slice(extra);
        self.squad(&args, None)
    }

    fn state(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.state_dir().join("state.json")).unwrap())
            .unwrap()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.state_dir().join("notifications.md")).unwrap()
    }
}

fn all_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            all_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

impl Drop for Fixture {
    /// The privacy check: every file written under the temp dir is free of the canaries.
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let mut files = Vec::new();
        all_files(self.tmp.path(), &mut files);
        for f in files {
            let bytes = std::fs::read(&f).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            for c in CANARIES {
                assert!(!text.contains(c), "{} leaks a canary", f.display());
            }
        }
    }
}

#[derive(Clone)]
struct Received {
    path: String,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

/// A real HTTP/1.1 server on 127.0.0.1 answering every request with `status`.
fn http_server(status: u16) -> (String, Arc<Mutex<Vec<Received>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let received = Arc::new(Mutex::new(Vec::new()));
    let rec = received.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let path = line
                .split_whitespace()
                .nth(1)
                .unwrap_or_default()
                .to_owned();
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
            let len = headers
                .get("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0; len];
            reader.read_exact(&mut body).unwrap();
            rec.lock().unwrap().push(Received {
                path,
                headers,
                body,
            });
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    (format!("http://{addr}"), received)
}

fn verify(secret: &str, body: &[u8], header: &str) -> bool {
    use hmac::{Hmac, Mac};
    let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    let hex = header.strip_prefix("sha256=").unwrap();
    mac.verify_slice(&hex::decode(hex).unwrap()).is_ok()
}

#[test]
fn configure_writes_notify_with_replace_semantics() {
    let f = Fixture::new();
    let o = f.squad(
        &[
            "approval",
            "configure",
            "--channel",
            "github-issue",
            "--handle",
            "@octocat",
            "--repo",
            "owner/repo",
            "--email",
            "me@example.com",
        ],
        None,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(f.state()["notify"]["github"]["handle"], "octocat");
    assert_eq!(f.state()["notify"]["enabled"], true);
    let o = f.squad(
        &["--json", "approval", "configure", "--channel", "in-chat"],
        None,
    );
    assert_eq!(o.code, 0);
    let printed: Value = serde_json::from_str(&o.stdout).unwrap();
    let expected = serde_json::json!({"approvalChannel": "in-chat", "enabled": false, "email": ""});
    assert_eq!(printed, expected);
    assert_eq!(
        f.state()["notify"],
        expected,
        "the github target is gone (replace semantics)"
    );
}

#[test]
fn configure_refuses_bad_input_and_never_takes_a_url_or_token() {
    let f = Fixture::new();
    let before = f.state_dir().join("state.json").exists();
    let cases: Vec<Vec<&str>> = vec![
        vec!["--channel", "carrier-pigeon"],
        vec!["--channel", "github-issue"],
        vec!["--channel", "github-issue", "--handle", "octocat"],
        vec![
            "--channel",
            "github-issue",
            "--handle",
            "not a login!",
            "--repo",
            "o/r",
        ],
        vec![
            "--channel",
            "github-issue",
            "--handle",
            "octocat",
            "--repo",
            "no-slash",
        ],
        vec!["--channel", "in-chat", "--email", "not-an-email"],
        vec![
            "--channel",
            "webhook",
            "--handle",
            "https://hooks.slack.com/services/T/B/CANARY-x",
            "--repo",
            "o/r",
        ],
        vec![
            "--channel",
            "webhook",
            "--email",
            "ghp_CANARYtoken0000000000000000000000",
        ],
        vec![
            "--channel",
            "webhook",
            "--webhook-url",
            "https://example.invalid/CANARY",
        ],
        vec!["--channel", "webhook", "--token", "CANARY"],
    ];
    for extra in cases {
        let mut args = vec!["approval", "configure"];
        args.extend(extra.iter().copied());
        // These inputs hold canaries on purpose; the output must not echo them.
        let out = Command::new(env!("CARGO_BIN_EXE_squad"))
            .arg("-C")
            .arg(f.tmp.path())
            .args(["--state-dir", "state"])
            .args(&args)
            .output()
            .unwrap();
        let o = f.record(out);
        assert_eq!(o.code, 2, "{extra:?}: {}", o.stderr);
        assert!(o.stderr.starts_with("error: "), "{extra:?}: {}", o.stderr);
    }
    assert_eq!(
        f.state_dir().join("state.json").exists(),
        before,
        "nothing written"
    );
}

#[test]
fn request_without_a_ping_records_nothing() {
    let f = Fixture::new();
    let o = f.request("autopilot", "step:plan", &[]);
    assert_eq!(o.code, 0);
    assert!(o.stdout.starts_with("no gate: autopilot"), "{}", o.stdout);
    let o = f.squad(
        &[
            "--json",
            "approval",
            "request",
            "--mode",
            "autonomous",
            "--trigger",
            "final-outcome",
            "--topic",
            "t",
            "--awaiting",
            "a",
            "--detail",
            "d",
        ],
        None,
    );
    assert_eq!(o.code, 0);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["gate"], Value::Null);
    assert!(v["reason"].as_str().unwrap().contains("autonomous"));
    assert!(!f.state_dir().exists(), "nothing recorded");
}

#[test]
fn request_refuses_bad_input_with_exit_2_and_changes_nothing() {
    let f = Fixture::new();
    let cases: Vec<(&str, &str, Vec<&str>)> = vec![
        ("manual", "risk-gate", vec![]),
        ("autopilot", "deploy", vec![]),
        ("autopilot", "risk-gate", vec!["--run", "has space"]),
        ("autopilot", "risk-gate", vec!["--expires-in", "0"]),
        ("autopilot", "risk-gate", vec!["--expires-in", "-5"]),
        (
            "autopilot",
            "risk-gate",
            vec!["--expires-in", "300000000000"],
        ),
        ("autopilot", "risk-gate", vec!["--expires-in", "31536001"]),
        ("autopilot", "risk-gate", vec!["--topic", ""]),
        ("autopilot", "risk-gate", vec!["--awaiting", "two\nlines"]),
    ];
    for (mode, trigger, extra) in cases {
        let mut args = vec!["approval", "request", "--mode", mode, "--trigger", trigger];
        if !extra.contains(&"--topic") {
            args.extend(["--topic", "t"]);
        }
        if !extra.contains(&"--awaiting") {
            args.extend(["--awaiting", "a"]);
        }
        args.extend(["--detail", "d"]);
        args.extend(extra.iter().copied());
        let o = f.squad(&args, None);
        assert_eq!(o.code, 2, "{mode} {trigger} {extra:?}: {}", o.stderr);
        assert!(o.stderr.starts_with("error: "));
    }
    assert!(!f.state_dir().join("state.json").exists());
}

#[test]
fn in_chat_end_to_end_with_every_exit_code() {
    let f = Fixture::new();
    // No gate yet: exit 1 (the state directory exists; one that does not is a usage error).
    std::fs::create_dir_all(f.state_dir()).unwrap();
    let o = f.squad(&["approval", "wait"], Some("/approve\n"));
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("no gate is pending"));

    // approve: 0. Noise, quotes and empty lines before the command do not count.
    let gate = f
        .request("interactive", "step:plan", &[])
        .stdout
        .trim()
        .to_owned();
    assert!(gate.starts_with("g-") && gate.len() == 14, "{gate}");
    let state = f.state();
    assert_eq!(state["approval"]["pendingGates"][0]["id"], gate.as_str());
    // A second request while pending: exit 1, nothing changed.
    let before = std::fs::read(f.state_dir().join("state.json")).unwrap();
    let o = f.request("interactive", "step:review", &[]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("still pending"));
    assert_eq!(
        std::fs::read(f.state_dir().join("state.json")).unwrap(),
        before
    );
    let o = f.squad(
        &["approval", "wait"],
        // A quote swallows the lines after it until an empty line, as in a comment.
        Some("\n\nyes\n> /stop\n\n/approve g-000000000000\n/approve\n"),
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "approved");
    assert!(
        o.stderr.contains("names gate g-000000000000"),
        "{}",
        o.stderr
    );

    // changes: 3, the note on stdout.
    f.request("interactive", "step:review", &[]);
    let o = f.squad(&["approval", "wait"], Some("/changes: split the PR\n"));
    assert_eq!(o.code, 3);
    assert_eq!(o.stdout, "split the PR\n");

    // end of input without a command: 5, still pending.
    let gate = f
        .request("interactive", "step:implement", &[])
        .stdout
        .trim()
        .to_owned();
    let o = f.squad(&["approval", "wait"], Some("\n\nlooks fine\n"));
    assert_eq!(o.code, 5, "{}", o.stderr);
    assert_eq!(
        f.state()["approval"]["pendingGates"][0]["id"],
        gate.as_str()
    );
    let o = f.squad(&["approval", "wait"], None);
    assert_eq!(o.code, 5);

    // --json wait, then stop: 4, and the run is over.
    let o = f.squad(
        &["--json", "approval", "wait", "--gate", &gate],
        Some("/STOP\n"),
    );
    assert_eq!(o.code, 4);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["state"], "stopped");
    assert_eq!(v["gate"], gate.as_str());
    let o = f.request("interactive", "step:review", &[]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("was stopped"), "{}", o.stderr);
    // Asking again about the decided gate reports the same decision.
    assert_eq!(
        f.squad(&["approval", "wait", "--gate", &gate], None).code,
        4
    );
    assert_eq!(
        f.squad(&["approval", "wait", "--gate", "g-ffffffffffff"], None)
            .code,
        1
    );
    assert_eq!(
        f.squad(&["approval", "wait", "--gate", "nope"], None).code,
        2
    );

    // status, human and JSON.
    let o = f.squad(&["approval", "status"], None);
    assert_eq!(o.code, 0);
    assert!(o.stdout.contains("(stopped)"), "{}", o.stdout);
    assert!(o.stdout.contains("hash chain intact"), "{}", o.stdout);
    let v: Value =
        serde_json::from_str(&f.squad(&["--json", "approval", "status"], None).stdout).unwrap();
    assert_eq!(v["pending"], serde_json::json!([]));
    assert_eq!(v["recent"][0]["state"], "stopped");
    assert_eq!(v["log"]["intact"], true);
}

#[test]
fn timeout_keeps_the_gate_pending_and_expiry_is_exit_6() {
    let f = Fixture::new();
    let gate = f
        .request(
            "autopilot",
            "risk-gate",
            &["--run", "nightly-42", "--expires-in", "2"],
        )
        .stdout
        .trim()
        .to_owned();
    // stdin stays open and silent: the timeout ends the wait with 5.
    let mut child = Command::new(env!("CARGO_BIN_EXE_squad"))
        .arg("-C")
        .arg(f.tmp.path())
        .args([
            "--state-dir",
            "state",
            "approval",
            "wait",
            "--timeout",
            "1",
            "--interval",
            "1",
        ])
        .envs(&f.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _keep_open = child.stdin.take();
    let o = f.record(child.wait_with_output().unwrap());
    assert_eq!(o.code, 5, "{}", o.stderr);
    assert_eq!(
        f.state()["approval"]["pendingGates"][0]["id"],
        gate.as_str()
    );
    // Still waiting when the gate expires: 6, long before the timeout.
    let mut child = Command::new(env!("CARGO_BIN_EXE_squad"))
        .arg("-C")
        .arg(f.tmp.path())
        .args([
            "--state-dir",
            "state",
            "approval",
            "wait",
            "--timeout",
            "30",
        ])
        .envs(&f.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _keep_open2 = child.stdin.take();
    let started = std::time::Instant::now();
    let o = f.record(child.wait_with_output().unwrap());
    assert_eq!(o.code, 6, "{}", o.stderr);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(o.stdout.trim(), "expired");
    // A decision after expiry does not count.
    let o = f.squad(&["approval", "wait", "--gate", &gate], Some("/approve\n"));
    assert_eq!(o.code, 6, "{}", o.stderr);
    assert!(f.log().contains("Resolved: expired"));
    assert_eq!(f.state()["approval"]["runs"][0]["id"], "nightly-42");
    // Nobody waits while a gate expires: the next wait finds it expired.
    f.request("autopilot", "risk-gate", &["--expires-in", "1"]);
    std::thread::sleep(Duration::from_millis(1100));
    let o = f.squad(&["approval", "wait"], Some("/approve\n"));
    assert_eq!(o.code, 6, "{}", o.stderr);
}

#[test]
fn approve_all_pre_approves_later_impactful_actions_but_not_risk_gates() {
    let f = Fixture::new();
    f.request("autopilot", "impactful-action", &[]);
    assert_eq!(
        f.squad(&["approval", "wait"], Some("/approve-all\n")).code,
        0
    );
    let o = f.request("autopilot", "impactful-action", &[]);
    assert_eq!(o.code, 0);
    assert!(o.stderr.contains("pre-approved"), "{}", o.stderr);
    assert!(!o.stderr.contains("How to respond"), "no ping");
    let o = f.squad(&["approval", "wait"], None);
    assert_eq!(o.code, 0, "wait returns at once: {}", o.stderr);
    let o = f.request("autopilot", "risk-gate", &[]);
    assert!(o.stderr.contains("How to respond"), "a risk gate pings");
    assert_eq!(f.squad(&["approval", "wait"], None).code, 5);
}

#[test]
fn webhook_is_delivered_signed_to_a_real_server() {
    let mut f = Fixture::new();
    let (base, received) = http_server(200);
    f.env
        .insert("SQUAD_WEBHOOK_URL".into(), format!("{base}{CANARY_PATH}"));
    assert_eq!(
        f.squad(&["approval", "configure", "--channel", "webhook"], None)
            .code,
        0
    );
    let o = f.request("autopilot", "final-outcome", &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let gate = o.stdout.trim().to_owned();
    let got = received.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].path, CANARY_PATH);
    assert!(verify(
        CANARY_SECRET,
        &got[0].body,
        &got[0].headers["x-squad-signature-256"]
    ));
    let body: Value = serde_json::from_slice(&got[0].body).unwrap();
    assert_eq!(body["gate"], gate.as_str());
    assert!(body["deliveryId"].is_string() && body["sentAt"].is_string());
    let log = f.log();
    assert!(log.contains("* Channel: webhook"), "{log}");
    assert!(
        log.contains("* Approval Ref: webhook (outbound only); in-chat"),
        "{log}"
    );
    // Outbound only: the decision still comes in-chat.
    assert_eq!(f.squad(&["approval", "wait"], Some("/approve\n")).code, 0);
}

#[test]
fn a_failing_webhook_gets_bounded_retries_and_the_gate_stays_pending() {
    let mut f = Fixture::new();
    let (base, received) = http_server(500);
    f.env
        .insert("SQUAD_WEBHOOK_URL".into(), format!("{base}{CANARY_PATH}"));
    f.env.insert("SQUAD_WEBHOOK_RETRIES".into(), "2".into());
    f.squad(&["approval", "configure", "--channel", "webhook"], None);
    let o = f.request("autopilot", "risk-gate", &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(received.lock().unwrap().len(), 3);
    assert!(
        o.stderr.contains(
            "warning: webhook channel: webhook delivery failed after 3 attempts: HTTP 500"
        ),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains("How to respond"),
        "degraded to in-chat, and said so"
    );
    let gate = o.stdout.trim();
    assert_eq!(f.state()["approval"]["pendingGates"][0]["id"], gate);
    assert!(
        f.log()
            .contains("webhook failed: webhook delivery failed after 3 attempts: HTTP 500")
    );
    // Nothing listening (the fixture's canary URL): connection failures, same story.
    f.env.insert(
        "SQUAD_WEBHOOK_URL".into(),
        format!("http://127.0.0.1:9{CANARY_PATH}"),
    );
    f.squad(&["approval", "wait"], Some("/approve\n"));
    let o = f.request("autopilot", "risk-gate", &[]);
    assert_eq!(o.code, 0);
    assert!(o.stderr.contains("connection failed"), "{}", o.stderr);
}

#[test]
fn unavailable_channels_degrade_to_in_chat_and_say_so() {
    let mut f = Fixture::new();
    f.env.remove("SQUAD_WEBHOOK_URL");
    let o = f.squad(&["approval", "configure", "--channel", "webhook"], None);
    assert!(
        o.stderr.contains("SQUAD_WEBHOOK_URL is not set"),
        "{}",
        o.stderr
    );
    let o = f.request("autopilot", "risk-gate", &[]);
    assert_eq!(o.code, 0);
    assert!(o.stderr.contains("degrades to in-chat"), "{}", o.stderr);
    assert!(o.stderr.contains("How to respond"));
    f.squad(&["approval", "wait"], Some("/approve\n"));
    f.squad(
        &[
            "approval",
            "configure",
            "--channel",
            "github-issue",
            "--handle",
            "octocat",
            "--repo",
            "o/r",
        ],
        None,
    );
    // No token in the environment: github-issue degrades to in-chat and says why.
    f.env.remove("GITHUB_TOKEN");
    f.env.remove("GH_TOKEN");
    let o = f.request("autopilot", "risk-gate", &[]);
    assert!(
        o.stderr.contains(
            "github-issue channel degrades to in-chat: github: read token: set GITHUB_TOKEN or GH_TOKEN"
        ),
        "{}",
        o.stderr
    );
    assert!(f.log().contains("* Channel: in-chat"));
}

#[test]
fn help_has_examples() {
    let f = Fixture::new();
    for sub in [
        "configure",
        "request",
        "status",
        "wait",
        "acknowledge-tamper",
    ] {
        let o = f.squad(&["approval", sub, "--help"], None);
        assert_eq!(o.code, 0);
        assert!(o.stdout.contains("Example:"), "{sub}");
    }
}

#[test]
fn concurrent_requests_open_exactly_one_gate() {
    let f = Fixture::new();
    let children: Vec<_> = (0..4)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_squad"))
                .arg("-C")
                .arg(f.tmp.path())
                .args([
                    "--state-dir",
                    "state",
                    "approval",
                    "request",
                    "--mode",
                    "autopilot",
                ])
                .args(["--trigger", "risk-gate", "--awaiting", "a", "--detail", "d"])
                .args(["--topic", &format!("topic {i}")])
                .envs(&f.env)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<Out> = children
        .into_iter()
        .map(|c| f.record(c.wait_with_output().unwrap()))
        .collect();
    let opened: Vec<&Out> = outs.iter().filter(|o| o.code == 0).collect();
    assert_eq!(opened.len(), 1, "exactly one gate");
    assert!(
        outs.iter()
            .filter(|o| o.code != 0)
            .all(|o| o.code == 1 && o.stderr.contains("still pending"))
    );
    assert_eq!(
        f.state()["approval"]["pendingGates"][0]["id"],
        opened[0].stdout.trim()
    );
    let v: Value =
        serde_json::from_str(&f.squad(&["--json", "approval", "status"], None).stdout).unwrap();
    assert_eq!(v["log"]["entries"], 1);
    assert_eq!(v["log"]["intact"], true);
}

#[test]
fn status_reports_a_tampered_log() {
    let f = Fixture::new();
    f.request("autopilot", "risk-gate", &[]);
    f.squad(&["approval", "wait"], Some("/stop\n"));
    let path = f.state_dir().join("notifications.md");
    let log = f.log();
    std::fs::write(
        &path,
        log.replacen("* Resolved: pending", "* Resolved: approved", 1),
    )
    .unwrap();
    let v: Value =
        serde_json::from_str(&f.squad(&["--json", "approval", "status"], None).stdout).unwrap();
    assert_eq!(v["log"]["intact"], false);
    assert!(
        v["log"]["problem"].as_str().unwrap().contains("entry 2"),
        "{v}"
    );
    let o = f.squad(&["approval", "status"], None);
    assert!(o.stdout.contains("log: TAMPERED"), "{}", o.stdout);
    // Cutting the last entry shows too (the head recorded in state.json no longer matches).
    let cut = &log[..log.rfind("\n### ").unwrap() + 1];
    std::fs::write(&path, cut).unwrap();
    let v: Value =
        serde_json::from_str(&f.squad(&["--json", "approval", "status"], None).stdout).unwrap();
    assert_eq!(v["log"]["intact"], false);
}

/// Issue 14: the in-chat reader keeps Markdown state across lines, as the comment parser does.
#[test]
fn commands_inside_fences_on_stdin_do_not_count() {
    let f = Fixture::new();
    f.request("interactive", "step:plan", &[]);
    for fenced in [
        "```\n/approve\n```\n",
        "~~~\n/stop\n~~~\n",
        "````\n/changes: x\n```\n/approve-all\n````\n",
        "<!--\n/approve\n-->\n",
        "> quoted\n/approve\n",
    ] {
        let o = f.squad(&["approval", "wait"], Some(fenced));
        assert_eq!(o.code, 5, "{fenced:?}: {}", o.stderr);
        assert!(f.state()["approval"]["pendingGates"][0].is_object());
    }
    let o = f.squad(&["approval", "wait"], Some("```\n/stop\n```\n/approve\n"));
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stderr.contains("inside a Markdown block"), "{}", o.stderr);
}

/// Issue 14: a symlink at `.squad/notifications.md` is never followed.
#[test]
fn a_symlinked_log_is_never_followed_and_status_says_so() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.state_dir()).unwrap();
    let outside = f.tmp.path().join("outside.md");
    std::fs::write(&outside, "keep me\n").unwrap();
    std::os::unix::fs::symlink(&outside, f.state_dir().join("notifications.md")).unwrap();
    let o = f.request("autopilot", "risk-gate", &[]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("symbolic link"), "{}", o.stderr);
    assert!(!o.stderr.contains("How to respond"), "nothing was sent");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep me\n");
    let o = f.squad(&["approval", "status"], None);
    assert_eq!(o.code, 0);
    assert!(
        o.stdout
            .contains("problem: notifications.md is a symbolic link"),
        "{}",
        o.stdout
    );
    // A link to a file that does not exist: it is not created either.
    let missing = f.tmp.path().join("missing.md");
    std::fs::remove_file(f.state_dir().join("notifications.md")).unwrap();
    std::os::unix::fs::symlink(&missing, f.state_dir().join("notifications.md")).unwrap();
    assert_eq!(f.request("autopilot", "risk-gate", &[]).code, 1);
    assert!(!missing.exists());
    std::fs::remove_file(f.state_dir().join("notifications.md")).unwrap();
}

/// Issue 14: with a corrupt notifications.md, nothing is sent (the webhook used to be called).
#[test]
fn a_corrupt_log_stops_the_request_before_the_webhook_is_called() {
    let mut f = Fixture::new();
    let (base, received) = http_server(200);
    f.env
        .insert("SQUAD_WEBHOOK_URL".into(), format!("{base}{CANARY_PATH}"));
    f.squad(&["approval", "configure", "--channel", "webhook"], None);
    std::fs::write(f.state_dir().join("notifications.md"), "garbage\n").unwrap();
    let before = f.state();
    let o = f.request("autopilot", "risk-gate", &[]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        received.lock().unwrap().is_empty(),
        "the webhook was not called"
    );
    let after = f.state();
    assert_eq!(
        after["approval"]["pendingGates"][0],
        before["approval"]["pendingGates"][0]
    );
    assert_eq!(after["notify"], before["notify"]);
}

/// Issue 14: tampering stays reported until a human acknowledges it.
#[test]
fn tampering_refuses_new_gates_until_acknowledged() {
    let f = Fixture::new();
    f.request("autopilot", "risk-gate", &[]);
    f.squad(&["approval", "wait"], Some("/approve\n"));
    let log = f.log();
    let cut = &log[..log.rfind("\n### ").unwrap() + 1];
    std::fs::write(f.state_dir().join("notifications.md"), cut).unwrap();
    for _ in 0..2 {
        let o = f.request("autopilot", "risk-gate", &[]);
        assert_eq!(o.code, 1, "{}", o.stderr);
        assert!(o.stderr.contains("tampered"), "{}", o.stderr);
        assert!(o.stderr.contains("acknowledge-tamper"), "{}", o.stderr);
        let o = f.squad(&["approval", "status"], None);
        assert!(o.stdout.contains("log: TAMPERED (detected"), "{}", o.stdout);
    }
    let o = f.squad(
        &[
            "--json",
            "approval",
            "acknowledge-tamper",
            "--by",
            "Jane <jane@example.com>",
        ],
        None,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert!(
        v["acknowledged"]["problem"]
            .as_str()
            .unwrap()
            .contains("cut")
    );
    assert!(f.log().contains("* By: Jane <jane@example.com>"));
    let o = f.squad(&["approval", "status"], None);
    assert!(o.stdout.contains("hash chain intact"), "{}", o.stdout);
    let o = f.squad(&["approval", "acknowledge-tamper"], None);
    assert_eq!(o.code, 0);
    assert!(o.stdout.contains("nothing to acknowledge"));
    assert_eq!(f.request("autopilot", "risk-gate", &[]).code, 0);
}

/// Issue 14: credentials in URLs never reach an output.
#[test]
fn credentials_in_urls_are_never_printed() {
    let mut f = Fixture::new();
    f.squad(
        &[
            "approval",
            "configure",
            "--channel",
            "github-issue",
            "--handle",
            "octocat",
            "--repo",
            "o/r",
        ],
        None,
    );
    for url in [
        "http://user:CANARYpw@127.0.0.1:9/api/v3?access_token=CANARYq",
        "http://user:CANARYpw@127.0.0.1:9/api/v3",
    ] {
        f.env.insert("GITHUB_API_URL".into(), url.into());
        // `record` fails the test when any output holds a canary.
        let o = f.request("autopilot", "risk-gate", &[]);
        assert!(
            o.stderr.contains("degrades to in-chat") || o.stderr.contains("github-issue channel:"),
            "{}",
            o.stderr
        );
        if url.contains('?') {
            assert!(
                o.stderr.contains("http://***@127.0.0.1:9/api/v3?***"),
                "{}",
                o.stderr
            );
        }
        f.squad(&["approval", "wait", "--timeout", "0"], None);
        f.squad(&["approval", "wait"], Some("/approve\n"));
    }
    f.squad(&["approval", "configure", "--channel", "webhook"], None);
    f.env.insert(
        "SQUAD_WEBHOOK_URL".into(),
        "http://user:CANARYpw@127.0.0.1:9/hook?key=CANARYk".into(),
    );
    let o = f.request("autopilot", "risk-gate", &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

/// Issue 19: every --json output of `squad approval` uses snake_case keys, but the notify object.
#[test]
fn json_keys_are_snake_case_except_the_notify_object() {
    fn walk(v: &Value, path: &str, bad: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    if k.chars().any(|c| c.is_ascii_uppercase()) {
                        bad.push(format!("{path}.{k}"));
                    }
                    if k != "notify" {
                        walk(v, &format!("{path}.{k}"), bad);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, path, bad)),
            _ => {}
        }
    }
    let f = Fixture::new();
    let mut outputs = Vec::new();
    let mut json = |args: &[&str], stdin: Option<&str>| {
        let mut all = vec!["--json", "approval"];
        all.extend_from_slice(args);
        let o = f.squad(&all, stdin);
        outputs.push(serde_json::from_str::<Value>(&o.stdout).unwrap());
    };
    let request = [
        "request",
        "--mode",
        "autopilot",
        "--trigger",
        "impactful-action",
        "--topic",
        "t",
        "--awaiting",
        "a",
        "--detail",
        "d",
    ];
    json(&["configure", "--channel", "in-chat"], None);
    json(&request, None);
    json(&["wait"], Some("/approve-all\n"));
    json(&request, None);
    json(&["wait"], None);
    json(&["status"], None);
    json(&["acknowledge-tamper"], None);
    let mut bad = Vec::new();
    // The first output is the notify object itself, in the seed's spelling.
    for o in &outputs[1..] {
        walk(o, "", &mut bad);
    }
    assert!(bad.is_empty(), "camelCase keys: {bad:?}");
    let status = &outputs[5];
    assert_eq!(status["recent"][0]["decision"]["pre_approved"], true);
    assert!(status["current_run"].is_string());
    assert_eq!(
        outputs[0]["approvalChannel"], "in-chat",
        "the notify object keeps its spelling"
    );
}

/// Issue 19: `--repo` defaults to the GitHub remote origin, https or ssh form.
#[test]
fn configure_defaults_the_repo_to_the_github_origin() {
    let f = Fixture::new();
    let repo = f.tmp.path();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(args)
            .output()
            .unwrap();
        assert!(ok.status.success(), "{ok:?}");
    };
    git(&["init", "-q"]);
    git(&[
        "remote",
        "add",
        "origin",
        "https://user:CANARY@github.com/acme/widgets.git",
    ]);
    let configure = || {
        f.squad(
            &[
                "approval",
                "configure",
                "--channel",
                "github-issue",
                "--handle",
                "octocat",
            ],
            None,
        )
    };
    let o = configure();
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stderr.contains("--repo defaults to acme/widgets"),
        "{}",
        o.stderr
    );
    assert_eq!(f.state()["notify"]["github"]["repo"], "acme/widgets");
    git(&[
        "remote",
        "set-url",
        "origin",
        "git@github.com:acme/gadgets.git",
    ]);
    assert_eq!(configure().code, 0);
    assert_eq!(f.state()["notify"]["github"]["repo"], "acme/gadgets");
    git(&[
        "remote",
        "set-url",
        "origin",
        "https://gitlab.com/acme/widgets.git",
    ]);
    let o = configure();
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("hint: pass --repo"), "{}", o.stderr);
}

/// Issue 19: `--detail` takes `@file` and `-` (stdin).
#[test]
fn detail_comes_from_a_file_or_stdin() {
    let f = Fixture::new();
    std::fs::write(f.tmp.path().join("detail.md"), "From a file.\nTwo lines.\n").unwrap();
    let request = |detail: &str, stdin: Option<&str>| {
        let mut args = vec!["--json", "approval", "request", "--mode", "autopilot"];
        args.extend(["--trigger", "risk-gate", "--topic", "t", "--awaiting", "a"]);
        args.extend(["--detail", detail]);
        f.squad(&args, stdin)
    };
    for (detail, stdin, want) in [
        ("@detail.md", None, "From a file.\nTwo lines."),
        ("-", Some("From stdin.\n"), "From stdin."),
    ] {
        let o = request(detail, stdin);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let v: Value = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!(v["detail"], want);
        f.squad(&["approval", "wait"], Some("/approve\n"));
    }
    let o = request("@missing.md", None);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("--detail: cannot read"), "{}", o.stderr);
}

/// Issue 19: closed sets are value enums: listed in --help, a typo gets a suggestion.
#[test]
fn closed_sets_list_their_values_and_suggest_on_a_typo() {
    let f = Fixture::new();
    let o = f.squad(&["approval", "request", "--help"], None);
    for v in [
        "autopilot",
        "interactive",
        "autonomous",
        "step:research",
        "risk-gate",
    ] {
        assert!(o.stdout.contains(v), "{v}: {}", o.stdout);
    }
    let o = f.squad(&["approval", "configure", "--help"], None);
    assert!(o.stdout.contains("github-issue") && o.stdout.contains("in-chat"));
    for (flag, typo, want) in [
        ("--trigger", "risk-gat", "risk-gate"),
        ("--mode", "autopilt", "autopilot"),
    ] {
        let o = f.request(
            if flag == "--mode" { typo } else { "autopilot" },
            if flag == "--trigger" {
                typo
            } else {
                "risk-gate"
            },
            &[],
        );
        assert_eq!(o.code, 2);
        assert!(o.stderr.contains(want), "{flag}: {}", o.stderr);
    }
    let o = f.squad(&["approval", "configure", "--channel", "in-chta"], None);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("in-chat"), "{}", o.stderr);
}
