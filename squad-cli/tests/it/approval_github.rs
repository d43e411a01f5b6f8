//! `squad approval request|wait` with the github-issue channel, through the binary, against the
//! GitHub emulator of `squad-test-support` (wiremock on 127.0.0.1, GitHub's payload shapes),
//! which squad-notify's tests use too.
//! The emulator's token doubles as the privacy canary: it must never appear in stdout, stderr or
//! any file the command writes.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use squad_test_support::github::{self as emulator, APPROVER, Emulator, TOKEN};

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

struct Fixture {
    em: Emulator,
    tmp: tempfile::TempDir,
}

impl Fixture {
    async fn new() -> Self {
        let f = Self {
            em: Emulator::start().await,
            tmp: tempfile::tempdir().unwrap(),
        };
        let o = f.squad(&[
            "approval",
            "configure",
            "--channel",
            "github-issue",
            "--handle",
            APPROVER,
            "--repo",
            &format!("{}/{}", emulator::OWNER, emulator::REPO),
        ]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        f
    }

    fn squad(&self, args: &[&str]) -> Out {
        let out = Command::new(env!("CARGO_BIN_EXE_squad"))
            .arg("-C")
            .arg(self.tmp.path())
            .arg("--state-dir")
            .arg("state")
            .args(args)
            .env_remove("GH_TOKEN")
            .env("GITHUB_TOKEN", TOKEN)
            .env("GITHUB_API_URL", self.em.server.uri())
            .env("HOME", self.tmp.path())
            // The most verbose logs: the token must not reach them either.
            .env("RUST_LOG", "trace")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let o = Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        assert!(
            !o.stdout.contains(TOKEN) && !o.stderr.contains(TOKEN),
            "the token leaked: {}{}",
            o.stdout,
            o.stderr
        );
        o
    }

    fn request(&self, extra: &[&str]) -> Out {
        let mut args = vec![
            "approval",
            "request",
            "--mode",
            "autopilot",
            "--trigger",
            "impactful-action",
            "--topic",
            "Deploy billing",
            "--awaiting",
            "approve the deploy",
            "--detail",
            "Migrations ready.",
        ];
        args.extend_from_slice(extra);
        let o = self.squad(&args);
        assert_eq!(o.code, 0, "{}", o.stderr);
        o
    }

    fn state(&self) -> Value {
        let text = std::fs::read_to_string(self.tmp.path().join("state/state.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.tmp.path().join("state/notifications.md")).unwrap()
    }

    /// A comment on issue #1, a little after everything before it (emulator time).
    fn comment(&self, who: &str, body: &str) {
        self.em.clock.advance(30);
        let now = self.em.now();
        self.em.s().add_comment(1, who, body, now);
    }

    fn no_token_in_files(&self) {
        fn walk(dir: &Path) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p);
                } else {
                    let bytes = std::fs::read(&p).unwrap();
                    assert!(
                        !String::from_utf8_lossy(&bytes).contains(TOKEN),
                        "token in {}",
                        p.display()
                    );
                }
            }
        }
        walk(self.tmp.path());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn request_opens_the_issue_and_each_decision_gives_its_exit_code() {
    let cases = [
        ("/approve", 0, "approved", "closed"),
        ("/approve-all", 0, "approve-all", "closed"),
        (
            "/changes: split the migration",
            3,
            "split the migration",
            "open",
        ),
        ("/stop", 4, "stopped", "closed"),
    ];
    for (comment, code, stdout, issue_state) in cases {
        let f = Fixture::new().await;
        let o = f.request(&[]);
        assert!(
            o.stderr.contains("approval issue #1 acme/widgets"),
            "{}",
            o.stderr
        );
        let gate = o.stdout.trim().to_owned();
        let issue = f.em.s().issue(1);
        assert!(issue.body.contains(&gate), "{}", issue.body);
        assert_eq!(issue.assignees, [APPROVER]);
        assert_eq!(
            f.state()["approval"]["pendingGates"][0]["deliveries"][0]["channel"],
            "github-issue"
        );
        f.comment(APPROVER, comment);
        let o = f.squad(&["approval", "wait", "--interval", "1", "--timeout", "30"]);
        assert_eq!(o.code, code, "{comment}: {}", o.stderr);
        assert_eq!(o.stdout.trim(), stdout, "{comment}");
        assert_eq!(f.em.s().issue(1).state, issue_state, "{comment}");
        let log = f.log();
        assert!(log.contains("* Action: issue #1 acme/widgets"), "{log}");
        assert!(log.contains("* Approval Ref: #1 acme/widgets\n"), "{log}");
        assert!(f.state()["approval"]["pendingGates"][0].is_null());
        f.no_token_in_files();
    }
}

/// A first `wait` times out (exit 5) and stores the advanced poll state; a second process picks
/// up the same issue and gate from state.json and sees the approval.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_wait_process_resumes_on_the_same_issue_and_gate() {
    let f = Fixture::new().await;
    let gate = f.request(&[]).stdout.trim().to_owned();
    let o = f.squad(&["approval", "wait", "--interval", "1", "--timeout", "1"]);
    assert_eq!(o.code, 5, "{}", o.stderr);
    assert!(o.stderr.contains("answer on issue #1"), "{}", o.stderr);
    let locator = f.state()["approval"]["pendingGates"][0]["deliveries"][0]["locator"]
        .as_str()
        .unwrap()
        .to_owned();
    let stored: Value = serde_json::from_str(&locator).unwrap();
    assert_eq!(stored["issue"], 1);
    assert_eq!(stored["gateId"], gate.as_str());
    assert!(stored.get("commentsEtag").is_some(), "{stored}");
    f.comment(APPROVER, &format!("/approve {gate}"));
    let o = f.squad(&["approval", "wait", "--interval", "1", "--timeout", "30"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(f.em.s().issues.len(), 1);
    assert_eq!(f.em.s().issue(1).state, "closed");
    f.no_token_in_files();
}

/// Signals that must not count, all at once: a quoted and a fenced `/approve` (the real parser),
/// an approval naming another gate, an unauthorized commenter and a read-only collaborator.
/// The wait times out (5); the refused commands are in the log; then a real approval counts.
#[tokio::test(flavor = "multi_thread")]
async fn attacks_do_not_decide_and_refusals_are_logged() {
    let f = Fixture::new().await;
    f.em.person("mallory", None);
    f.em.person("reader", Some(("read", "read")));
    f.request(&[]);
    f.comment(APPROVER, "> /approve");
    f.comment(APPROVER, "```\n/approve\n```");
    f.comment(APPROVER, "/approve g-000000000000");
    f.comment("mallory", "/approve");
    f.comment("reader", "/stop");
    let o = f.squad(&["approval", "wait", "--interval", "1", "--timeout", "2"]);
    assert_eq!(o.code, 5, "{}", o.stderr);
    assert_eq!(f.em.s().issue(1).state, "open");
    let log = f.log();
    assert!(log.contains("names another gate (g-000000000000)"), "{log}");
    assert!(log.contains("not authorized (role none)"), "{log}");
    assert!(log.contains("not authorized (role read)"), "{log}");
    assert!(!log.contains("* Signal: > /approve"), "{log}");
    f.comment(APPROVER, "/approve");
    let o = f.squad(&["approval", "wait", "--interval", "1", "--timeout", "30"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    f.no_token_in_files();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_gate_exits_6_and_a_late_approval_does_not_count() {
    let f = Fixture::new().await;
    f.request(&["--expires-in", "2"]);
    let o = f.squad(&["approval", "wait", "--interval", "1", "--timeout", "30"]);
    assert_eq!(o.code, 6, "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "expired");
    f.comment(APPROVER, "/approve");
    let o = f.squad(&["approval", "wait"]);
    assert_eq!(o.code, 1, "no pending gate: {}", o.stderr);
    f.no_token_in_files();
}

/// A 429 with `Retry-After` while waiting: the wait says so, pauses as asked, and goes on.
#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limit_is_waited_out_and_the_wait_goes_on() {
    let f = Fixture::new().await;
    f.request(&[]);
    f.comment(APPROVER, "/approve");
    f.em.fault(
        "/comments",
        wiremock::ResponseTemplate::new(429)
            .insert_header("retry-after", "1")
            .set_body_json(
                serde_json::json!({"message": "You have exceeded a secondary rate limit"}),
            ),
    );
    let o = f.squad(&["approval", "wait", "--interval", "1", "--timeout", "30"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stderr.contains("HTTP 429: rate limited"), "{}", o.stderr);
    assert!(o.stderr.contains("retry in 1 s"), "{}", o.stderr);
    f.no_token_in_files();
}

/// A token GitHub refuses: the gate still opens, in-chat, and the warning names the failure,
/// never the token.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_token_degrades_to_in_chat_without_showing_it() {
    let f = Fixture::new().await;
    let wrong = "ghp_WRONGtokenCANARY999999999999999999";
    let out = Command::new(env!("CARGO_BIN_EXE_squad"))
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
        .args([
            "--trigger",
            "risk-gate",
            "--topic",
            "t",
            "--awaiting",
            "a",
            "--detail",
            "d",
        ])
        .env_remove("GH_TOKEN")
        .env("GITHUB_TOKEN", wrong)
        .env("GITHUB_API_URL", f.em.server.uri())
        .env("HOME", f.tmp.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("HTTP 401: GitHub refused the token"),
        "{stderr}"
    );
    assert!(stderr.contains("approve in-chat"), "{stderr}");
    assert!(!stderr.contains(wrong) && !stdout.contains(wrong));
    assert!(f.em.s().issues.is_empty());
    assert!(f.log().contains("* Channel: in-chat"));
    assert!(!f.log().contains(wrong));
}

#[tokio::test(flavor = "multi_thread")]
async fn verbose_logs_show_requests_and_rate_limits_but_no_secret() {
    let f = Fixture::new().await;
    // `Fixture::squad` runs every command with RUST_LOG=trace and asserts the token never
    // shows; here the logs must also say something, so the check is not vacuous.
    let o = f.request(&[]);
    assert!(o.stderr.contains("github request"), "{}", o.stderr);
    assert!(o.stderr.contains("ratelimit_remaining"), "{}", o.stderr);
    assert!(
        !o.stdout.contains("github request"),
        "logs go to stderr only"
    );
    // Without -v or RUST_LOG, nothing is logged.
    let quiet = Command::new(env!("CARGO_BIN_EXE_squad"))
        .arg("-C")
        .arg(f.tmp.path())
        .args(["--state-dir", "state", "approval", "status"])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("TRACE"));
}
