//! `squad approval` with many runs at once: a pending gate per run, concurrent requests from
//! separate processes, `status --run`, `wait --gate/--run`, the upgrade of a `state.json` written
//! by the single-gate format, quorum settings, `/revoke-all`, expiry and a read-only `.squad/`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

struct Repo {
    tmp: tempfile::TempDir,
}

impl Repo {
    fn new() -> Self {
        Self {
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    fn state_dir(&self) -> PathBuf {
        self.tmp.path().join("state")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_squad"));
        cmd.arg("-C")
            .arg(self.tmp.path())
            .arg("--state-dir")
            .arg("state")
            .args(args)
            .env("HOME", self.tmp.path())
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN")
            .env_remove("SQUAD_WEBHOOK_URL")
            .env_remove("RUST_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    fn squad(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let mut cmd = self.command(args);
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = cmd.spawn().unwrap();
        if let Some(input) = stdin {
            let mut pipe = child.stdin.take().unwrap();
            let _ = pipe.write_all(input.as_bytes());
        }
        let out = child.wait_with_output().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }

    fn request(&self, run: &str, trigger: &str, extra: &[&str]) -> Run {
        let mut args = vec![
            "approval",
            "request",
            "--mode",
            "autopilot",
            "--trigger",
            trigger,
            "--topic",
            "Deploy",
            "--awaiting",
            "approve the deploy",
            "--detail",
            "ready",
            "--run",
            run,
        ];
        args.extend_from_slice(extra);
        self.squad(&args, None)
    }

    fn status(&self, extra: &[&str]) -> Value {
        let mut args = vec!["--json", "approval", "status"];
        args.extend_from_slice(extra);
        let o = self.squad(&args, None);
        assert_eq!(o.code, 0, "{}", o.stderr);
        serde_json::from_str(&o.stdout).unwrap()
    }

    fn state(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.state_dir().join("state.json")).unwrap())
            .unwrap()
    }

    fn state_bytes(&self) -> Option<Vec<u8>> {
        std::fs::read(self.state_dir().join("state.json")).ok()
    }
}

fn ids(v: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = v["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["run"].as_str().unwrap().to_owned(),
                g["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn sixteen_processes_open_gates_for_distinct_runs_and_all_land() {
    let repo = Repo::new();
    let children: Vec<_> = (0..16)
        .map(|i| {
            let run = format!("run-{i:02}");
            repo.command(&[
                "approval",
                "request",
                "--mode",
                "autopilot",
                "--trigger",
                "impactful-action",
                "--topic",
                "Deploy",
                "--awaiting",
                "approve",
                "--detail",
                "ready",
                "--run",
                &run,
            ])
            .stdin(Stdio::null())
            .spawn()
            .unwrap()
        })
        .collect();
    // Status read while the writers run never sees a torn pair of files as tampering.
    for _ in 0..5 {
        let st = repo.status(&[]);
        assert!(st["tamper"].is_null(), "{st}");
        assert_ne!(st["log"]["intact"], false, "{st}");
    }
    let mut gates = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        gates.push(String::from_utf8(out.stdout).unwrap().trim().to_owned());
    }
    let st = repo.status(&[]);
    let pending = ids(&st);
    assert_eq!(pending.len(), 16, "{st}");
    let runs: Vec<String> = pending.iter().map(|p| p.0.clone()).collect();
    let want: Vec<String> = (0..16).map(|i| format!("run-{i:02}")).collect();
    assert_eq!(runs, want);
    let mut got: Vec<String> = pending.iter().map(|p| p.1.clone()).collect();
    got.sort();
    gates.sort();
    assert_eq!(got, gates, "every printed gate is pending, none merged");
    assert_eq!(st["log"]["intact"], true, "{st}");
    assert_eq!(st["log"]["entries"], 16, "{st}");
    // The same run again while its gate is pending: refused, nothing changed.
    let before = repo.state_bytes();
    let o = repo.request("run-03", "impactful-action", &[]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("still pending"), "{}", o.stderr);
    assert_eq!(repo.state_bytes(), before);
}

#[test]
fn status_and_wait_name_a_run_or_a_gate() {
    let repo = Repo::new();
    let g1 = repo.request("r1", "impactful-action", &[]).stdout;
    let g2 = repo.request("r2", "risk-gate", &[]).stdout;
    let (g1, g2) = (g1.trim(), g2.trim());
    let st = repo.status(&[]);
    assert_eq!(
        ids(&st),
        [("r1".into(), g1.into()), ("r2".into(), g2.into())]
    );
    assert_eq!(st["pending"][0]["quorum"], 1);
    assert_eq!(st["pending"][0]["approvals"], serde_json::json!([]));
    let text = repo.squad(&["approval", "status"], None).stdout;
    assert!(text.contains(&format!("pending: {g1} run r1")), "{text}");
    assert!(text.contains(&format!("pending: {g2} run r2")), "{text}");
    // One run.
    let one = repo.status(&["--run", "r2"]);
    assert_eq!(ids(&one), [("r2".into(), g2.into())]);
    // Unknown run: exit 2.
    for args in [
        &["approval", "status", "--run", "nope"][..],
        &["approval", "wait", "--run", "nope", "--timeout", "0"][..],
        &["approval", "status", "--run", "bad/run"][..],
    ] {
        let o = repo.squad(args, None);
        assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
    }
    // Two pending, neither named: exit 2, naming both.
    let o = repo.squad(&["approval", "wait", "--timeout", "0"], Some("/approve\n"));
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains(g1) && o.stderr.contains(g2),
        "{}",
        o.stderr
    );
    // --gate and --run together: exit 2.
    let o = repo.squad(&["approval", "wait", "--gate", g1, "--run", "r1"], None);
    assert_eq!(o.code, 2, "{}", o.stderr);
    // Wait on one run; the other stays pending.
    let o = repo.squad(&["approval", "wait", "--run", "r2"], Some("/approve\n"));
    assert_eq!(o.code, 0, "{}", o.stderr);
    let st = repo.status(&[]);
    assert_eq!(ids(&st), [("r1".into(), g1.into())]);
    // A line naming the other gate does not count for this one (in-chat binds as before).
    let o = repo.squad(
        &["approval", "wait", "--gate", g1, "--timeout", "0"],
        Some(&format!("/stop {g2}\n")),
    );
    assert_eq!(o.code, 5, "{}", o.stderr);
    let o = repo.squad(&["approval", "wait"], Some("/changes: smaller\n"));
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert_eq!(repo.status(&[])["log"]["intact"], true);
}

/// The fixture was written by the single-gate format (`pendingGate`), with its log.
fn legacy_fixture(repo: &Repo) -> (String, String) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../squad-notify/tests/fixtures/legacy-pending-gate");
    std::fs::create_dir_all(repo.state_dir()).unwrap();
    for f in ["state.json", "notifications.md"] {
        std::fs::copy(src.join(f), repo.state_dir().join(f)).unwrap();
    }
    let state = repo.state();
    let gate = state["approval"]["pendingGate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = state["approval"]["pendingGate"]["run"]
        .as_str()
        .unwrap()
        .to_owned();
    (gate, run)
}

#[test]
fn a_state_json_with_the_single_pending_gate_is_read_and_upgraded() {
    let repo = Repo::new();
    let (legacy, run) = legacy_fixture(&repo);
    // Read as before (the fixture's gate expires in 2026-12; the test clock is the real one, so
    // only the listing is checked when it has not expired yet).
    let st = repo.status(&[]);
    assert_eq!(st["log"]["intact"], true, "{st}");
    let listed = ids(&st);
    let expired = listed.is_empty();
    if !expired {
        assert_eq!(listed, [(run.clone(), legacy.clone())]);
    }
    // A request for another run upgrades the file on its write.
    let o = repo.request("r-new", "impactful-action", &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let state = repo.state();
    assert!(state["approval"].get("pendingGate").is_none(), "{state:#}");
    let pending = state["approval"]["pendingGates"].as_array().unwrap();
    let runs: Vec<&str> = pending.iter().map(|g| g["run"].as_str().unwrap()).collect();
    if expired {
        assert_eq!(runs, ["r-new"]);
        assert_eq!(state["approval"]["recent"][0]["id"], legacy.as_str());
    } else {
        assert_eq!(runs, [run.as_str(), "r-new"]);
        let o = repo.squad(&["approval", "wait", "--run", &run], Some("/approve\n"));
        assert_eq!(o.code, 0, "{}", o.stderr);
    }
    let st = repo.status(&[]);
    assert_eq!(
        st["log"]["intact"], true,
        "the hash chain covers both formats: {st}"
    );
}

#[test]
fn quorum_settings_are_checked_and_nothing_changes_on_bad_input() {
    let repo = Repo::new();
    let o = repo.squad(
        &[
            "approval",
            "configure",
            "--channel",
            "github-issue",
            "--handle",
            "octocat",
            "--repo",
            "acme/widgets",
            "--quorum",
            "3",
        ],
        None,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(repo.state()["notify"]["quorum"], 3);
    let before = repo.state_bytes();
    let bad: [&[&str]; 5] = [
        &[
            "--channel",
            "github-issue",
            "--handle",
            "octocat",
            "--repo",
            "acme/widgets",
            "--quorum",
            "0",
        ],
        &[
            "--channel",
            "github-issue",
            "--handle",
            "octocat",
            "--repo",
            "acme/widgets",
            "--quorum",
            "101",
        ],
        &[
            "--channel",
            "github-issue",
            "--handle",
            "octocat",
            "--repo",
            "acme/widgets",
            "--quorum",
            "-1",
        ],
        &["--channel", "in-chat", "--quorum", "2"],
        &["--channel", "webhook", "--quorum", "2"],
    ];
    for args in bad {
        let mut all = vec!["approval", "configure"];
        all.extend_from_slice(args);
        let o = repo.squad(&all, None);
        assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
        assert!(o.stderr.contains("quorum"), "{args:?}: {}", o.stderr);
        assert_eq!(repo.state_bytes(), before, "{args:?} changed state.json");
    }
    // In-chat with the default quorum of 1 is fine.
    let o = repo.squad(
        &[
            "approval",
            "configure",
            "--channel",
            "in-chat",
            "--quorum",
            "1",
        ],
        None,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(repo.state()["notify"].get("quorum").is_none());
}

#[test]
fn revoke_all_in_chat_makes_later_impactful_gates_ping_again() {
    let repo = Repo::new();
    repo.request("r1", "impactful-action", &[]);
    let o = repo.squad(&["approval", "wait", "--run", "r1"], Some("/approve-all\n"));
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = repo.request("r1", "impactful-action", &["--json"]);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["state"], "approved", "pre-approved: {}", o.stderr);
    // A risk gate of r1 pings; /revoke-all typed while waiting on it ends the approve-all.
    repo.request("r1", "risk-gate", &[]);
    let o = repo.squad(
        &["approval", "wait", "--run", "r1"],
        Some("/revoke-all\n/approve\n"),
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let log = std::fs::read_to_string(repo.state_dir().join("notifications.md")).unwrap();
    assert!(log.contains("revoke-all"), "{log}");
    let o = repo.request("r1", "impactful-action", &["--json"]);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["state"], "pending", "pings again: {}", o.stderr);
    assert_eq!(repo.status(&[])["log"]["intact"], true);
}

#[test]
fn an_expired_gate_is_not_listed_as_pending_and_wait_reports_it_at_once() {
    let repo = Repo::new();
    let gate = repo
        .request("r1", "impactful-action", &["--expires-in", "1"])
        .stdout;
    let gate = gate.trim();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let st = repo.status(&[]);
    assert_eq!(st["pending"], serde_json::json!([]), "{st}");
    assert_eq!(st["recent"][0]["id"], gate);
    assert_eq!(st["recent"][0]["state"], "expired");
    let text = repo.squad(&["approval", "status"], None).stdout;
    assert!(text.contains("pending: none"), "{text}");
    let o = repo.squad(&["approval", "wait"], Some("/approve\n"));
    assert_eq!(o.code, 6, "{}", o.stderr);
    assert!(!o.stderr.contains("waiting"), "{}", o.stderr);
    assert_eq!(repo.status(&[])["log"]["intact"], true);
}

#[test]
fn status_only_reads_and_works_on_a_read_only_state_directory() {
    let repo = Repo::new();
    let gate = repo.request("r1", "impactful-action", &[]).stdout;
    let dir = repo.state_dir();
    let lock = dir.join(".state.lock");
    std::fs::remove_file(&lock).unwrap();
    let before = std::fs::read_dir(&dir).unwrap().count();
    let st = repo.status(&[]);
    assert_eq!(st["pending"][0]["id"], gate.trim());
    assert!(!lock.exists(), "status created the lock file");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), before);
    // Read-only for real: immutable (works for root too), else the permission bits.
    let immutable = Command::new("chattr")
        .arg("+i")
        .arg(&dir)
        .status()
        .is_ok_and(|s| s.success());
    if !immutable {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let o = repo.squad(&["--json", "approval", "status"], None);
    if immutable {
        let _ = Command::new("chattr").arg("-i").arg(&dir).status();
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    assert_eq!(o.code, 0, "{}", o.stderr);
    let st: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(st["pending"][0]["id"], gate.trim());
}
