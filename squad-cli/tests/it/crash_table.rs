//! Kill at every file-changing system call (issue 14): each state-changing `squad approval`
//! command runs under `strace -f -e inject=<syscall>:signal=SIGKILL:when=<n>`, for every
//! file-changing syscall and n = 1, 2, 3... until the command completes without being killed.
//! After each kill, `approval status` and the command itself run again, and the state must be
//! whole: nothing lost, no false tampering alarm, no phantom pending entry, no temporary file
//! left behind.
//!
//! The crash table (command, crash points tried, recovered, torn) is written to
//! `<target tmp>/crash-table.md` and printed (`cargo test crash_table -- --nocapture`).
//!
//! strace comes from the distribution (`apt-get install -y strace`). Without it (or where
//! ptrace is not allowed) the test says so and passes, unless `SQUAD_REQUIRE_STRACE=1` (set by
//! CI, which installs it), when a missing strace is a failure.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const SYSCALLS: [&str; 14] = [
    "openat",
    "openat2",
    "write",
    "pwrite64",
    "fsync",
    "fdatasync",
    "rename",
    "renameat",
    "renameat2",
    "unlink",
    "unlinkat",
    "mkdir",
    "mkdirat",
    "flock",
];

fn squad(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    run(Command::new(env!("CARGO_BIN_EXE_squad")), dir, args, stdin)
}

fn run(mut cmd: Command, dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    cmd.arg("-C")
        .arg(dir)
        .args(["--state-dir", "state"])
        .args(args)
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("SQUAD_WEBHOOK_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(input) = stdin {
        use std::io::Write;
        let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

fn strace_works() -> bool {
    let tmp = tempfile::tempdir().unwrap();
    Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "true"])
        .current_dir(tmp.path())
        .status()
        .is_ok_and(|s| s.success())
}

/// One state-changing command and what must hold after any crash and a rerun.
struct Scenario {
    name: &'static str,
    args: Vec<String>,
    stdin: Option<&'static str>,
    /// Prepares the state directory the command starts from.
    setup: fn(&Path) -> Value,
    /// Whether the state may show a (real) tampering right after a kill.
    tampered_before: bool,
    /// Checks the state after the rerun; `ctx` is what `setup` returned.
    check: fn(&Path, &Value) -> Result<(), String>,
}

fn request_args(topic: &str) -> Vec<&str> {
    vec![
        "approval",
        "request",
        "--mode",
        "autopilot",
        "--trigger",
        "risk-gate",
        "--topic",
        topic,
        "--awaiting",
        "a",
        "--detail",
        "d",
    ]
}

fn state(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("state/state.json")).unwrap()).unwrap()
}

fn log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("state/notifications.md")).unwrap_or_default()
}

fn entries(log: &str) -> usize {
    let body = log
        .rsplit("below this line. -->\n")
        .next()
        .unwrap_or_default();
    body.lines().filter(|l| l.starts_with("### ")).count()
}

/// A decided gate, so that both files exist.
fn with_history(dir: &Path) -> Value {
    assert_eq!(
        squad(dir, &request_args("first"), None).status.code(),
        Some(0)
    );
    assert_eq!(
        squad(dir, &["approval", "wait"], Some("/approve\n"))
            .status
            .code(),
        Some(0)
    );
    serde_json::json!({"entries": entries(&log(dir))})
}

fn with_pending(dir: &Path) -> Value {
    let mut v = with_history(dir);
    let o = squad(dir, &request_args("second"), None);
    v["gate"] = String::from_utf8(o.stdout).unwrap().trim().into();
    v["entries"] = entries(&log(dir)).into();
    v
}

fn with_tampering(dir: &Path) -> Value {
    let v = with_history(dir);
    let text = log(dir);
    let cut = &text[..text.rfind("\n### ").unwrap() + 1];
    std::fs::write(dir.join("state/notifications.md"), cut).unwrap();
    let o = squad(dir, &["approval", "status"], None);
    assert!(String::from_utf8_lossy(&o.stdout).contains("TAMPERED"));
    v
}

/// Every `Resolved: pending` entry names a gate that state.json holds (no phantom).
fn no_phantom(dir: &Path) -> Result<(), String> {
    let s = state(dir);
    let a = &s["approval"];
    let known: Vec<&str> = a["recent"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(a["pendingGate"].as_object().map(|_| &a["pendingGate"]))
        .filter_map(|g| g["id"].as_str())
        .collect();
    let text = log(dir);
    for entry in text.split("\n### ").skip(1) {
        if entry.contains("* Resolved: pending") {
            let gate = entry
                .lines()
                .find_map(|l| l.strip_prefix("* Gate: "))
                .and_then(|l| l.split_whitespace().next())
                .unwrap_or_default();
            if !known.contains(&gate) {
                return Err(format!("phantom pending entry for {gate}"));
            }
        }
    }
    Ok(())
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "approval configure",
            args: ["approval", "configure", "--channel", "webhook"]
                .map(String::from)
                .to_vec(),
            stdin: None,
            setup: with_history,
            tampered_before: false,
            check: |dir, ctx| {
                let s = state(dir);
                (s["notify"]["approvalChannel"] == "webhook"
                    && entries(&log(dir)) == ctx["entries"].as_u64().unwrap_or(0) as usize)
                    .then_some(())
                    .ok_or_else(|| format!("notify {} entries {}", s["notify"], entries(&log(dir))))
            },
        },
        Scenario {
            name: "approval request",
            args: request_args("crash")
                .into_iter()
                .map(String::from)
                .collect(),
            stdin: None,
            setup: with_history,
            tampered_before: false,
            check: |dir, ctx| {
                let s = state(dir);
                let pending = s["approval"]["pendingGate"]["id"]
                    .as_str()
                    .unwrap_or_default();
                let text = log(dir);
                let opened = text
                    .split("\n### ")
                    .filter(|e| e.contains(pending) && e.contains("* Resolved: pending"))
                    .count();
                let want = ctx["entries"].as_u64().unwrap_or(0) as usize + 1;
                (!pending.is_empty() && opened == 1 && entries(&text) == want)
                    .then_some(())
                    .ok_or_else(|| {
                        format!(
                            "pending {pending:?}, opened {opened}, entries {}",
                            entries(&text)
                        )
                    })
            },
        },
        Scenario {
            name: "approval wait (deciding)",
            args: Vec::new(),
            stdin: Some("/approve\n"),
            setup: with_pending,
            tampered_before: false,
            check: |dir, ctx| {
                let s = state(dir);
                let gate = ctx["gate"].as_str().unwrap_or_default();
                let decided = s["approval"]["recent"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|g| g["id"] == gate && g["state"] == "approved");
                let text = log(dir);
                let resolutions = text
                    .split("\n### ")
                    .filter(|e| e.contains(gate) && e.contains("* Resolved: approved"))
                    .count();
                (decided && s["approval"]["pendingGate"].is_null() && resolutions == 1)
                    .then_some(())
                    .ok_or_else(|| format!("decided {decided}, resolutions {resolutions}"))
            },
        },
        Scenario {
            name: "approval acknowledge-tamper",
            args: ["approval", "acknowledge-tamper", "--by", "tester"]
                .map(String::from)
                .to_vec(),
            stdin: None,
            setup: with_tampering,
            tampered_before: true,
            check: |dir, _| {
                let acks = log(dir).matches("tamper-acknowledged\n").count();
                let s = state(dir);
                (acks == 1 && s["approval"]["tamper"].is_null())
                    .then_some(())
                    .ok_or_else(|| {
                        format!(
                            "{acks} acknowledgements, tamper {}",
                            s["approval"]["tamper"]
                        )
                    })
            },
        },
    ]
}

/// The state after a crash, a status and a rerun.
fn verify(dir: &Path, sc: &Scenario, args: &[&str], ctx: &Value) -> Result<(), String> {
    let o = squad(dir, &["--json", "approval", "status"], None);
    if o.status.code() != Some(0) {
        return Err(format!(
            "status failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let st: Value = serde_json::from_slice(&o.stdout).map_err(|e| e.to_string())?;
    if !sc.tampered_before && (!st["tamper"].is_null() || st["log"]["intact"] == false) {
        return Err(format!("false tampering alarm: {}", st["tamper"]));
    }
    let o = squad(dir, args, sc.stdin);
    let code = o.status.code();
    let fine = match sc.name {
        // A request killed after it recorded its gate finds it pending: exit 1, as documented.
        "approval request" => code == Some(0) || code == Some(1),
        _ => code == Some(0),
    };
    if !fine {
        return Err(format!(
            "rerun exit {code:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let o = squad(dir, &["--json", "approval", "status"], None);
    let st: Value = serde_json::from_slice(&o.stdout).map_err(|e| e.to_string())?;
    if !st["tamper"].is_null() || st["log"]["intact"] != true {
        return Err(format!(
            "log after the rerun: {} {}",
            st["log"], st["tamper"]
        ));
    }
    let temps: Vec<PathBuf> = std::fs::read_dir(dir.join("state"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".tmp-"))
        .collect();
    if !temps.is_empty() {
        return Err(format!("temporary files left: {temps:?}"));
    }
    if state(dir)["approval"]["batch"].is_object() {
        return Err("a batch is still open".into());
    }
    no_phantom(dir)?;
    (sc.check)(dir, ctx)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn a_kill_at_every_file_changing_syscall_loses_nothing() {
    if !strace_works() {
        let required = std::env::var("SQUAD_REQUIRE_STRACE").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "strace is required (SQUAD_REQUIRE_STRACE=1) but does not work here"
        );
        eprintln!(
            "note: strace is not available (apt-get install -y strace); the kill test is skipped"
        );
        return;
    }
    let mut table =
        String::from("| command | crash points tried | recovered | torn |\n|---|---|---|---|\n");
    let mut failures = Vec::new();
    for sc in scenarios() {
        let template = tempfile::tempdir().unwrap();
        let ctx = (sc.setup)(template.path());
        let mut args: Vec<String> = sc.args.clone();
        if sc.name.starts_with("approval wait") {
            args = ["approval", "wait", "--gate", ctx["gate"].as_str().unwrap()]
                .map(String::from)
                .to_vec();
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (mut tried, mut recovered) = (0, 0);
        for syscall in SYSCALLS {
            for n in 1..=400 {
                let work = tempfile::tempdir().unwrap();
                copy_dir(&template.path().join("state"), &work.path().join("state"));
                let mut strace = Command::new("strace");
                strace
                    .args(["-f", "-qq", "-o", "/dev/null", "-e"])
                    .arg(format!("inject={syscall}:signal=SIGKILL:when={n}"));
                strace.arg(env!("CARGO_BIN_EXE_squad"));
                let o = run(strace, work.path(), &args, sc.stdin);
                // strace ends the way its tracee ended: killed by the signal itself.
                let killed = o.status.signal() == Some(9) || o.status.code() == Some(128 + 9);
                if !killed {
                    break;
                }
                tried += 1;
                match verify(work.path(), &sc, &args, &ctx) {
                    Ok(()) => recovered += 1,
                    Err(e) => failures.push(format!("{} killed at {syscall} #{n}: {e}", sc.name)),
                }
            }
        }
        table.push_str(&format!(
            "| `squad {}` | {tried} | {recovered} | {} |\n",
            sc.name,
            tried - recovered
        ));
        assert!(tried > 0, "{}: no crash point was hit", sc.name);
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("crash-table.md");
    std::fs::write(&out, &table).unwrap();
    println!("{table}");
    assert!(failures.is_empty(), "torn states:\n{}", failures.join("\n"));
}
