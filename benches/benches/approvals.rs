//! `squad approval request` from many processes at once: 16 processes, each opening a gate for
//! its own run in one state directory, started together, against the same 16 requests made one
//! after another (the baseline), in the same run of the bench. Each round starts from an empty
//! state directory; the bench checks that every gate landed and that the hash chain of
//! `notifications.md` verifies, then reports the median total time of each and their ratio.
//!
//! Run with `cargo bench -p squad-bench --bench approvals` after
//! `cargo build --release -p squad-cli` (or point `SQUAD_BIN` at a binary).
#![expect(
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a broken fixture should stop the bench; the bench reports its figures"
)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use squad_bench::squad_bin;

const PROCESSES: usize = 16;
const ROUNDS: usize = 7;

fn request(bin: &Path, dir: &Path, run: usize) -> Command {
    let mut c = Command::new(bin);
    c.arg("-C")
        .arg(dir)
        .args(["--state-dir", "state", "approval", "request"])
        .args(["--mode", "autopilot", "--trigger", "impactful-action"])
        .args(["--topic", "Deploy", "--awaiting", "approve the deploy"])
        .args(["--detail", "ready", "--run", &format!("run-{run:02}")])
        .env("HOME", dir)
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("SQUAD_WEBHOOK_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// Checks that all the gates landed and the log verifies.
fn check(bin: &Path, dir: &Path) {
    let out = Command::new(bin)
        .arg("-C")
        .arg(dir)
        .args(["--state-dir", "state", "--json", "approval", "status"])
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pending"].as_array().unwrap().len(), PROCESSES, "{v}");
    assert_eq!(v["log"]["intact"], true, "{v}");
}

fn concurrent(bin: &Path) -> Duration {
    let tmp = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let children: Vec<_> = (0..PROCESSES)
        .map(|i| request(bin, tmp.path(), i).spawn().unwrap())
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let took = start.elapsed();
    check(bin, tmp.path());
    took
}

fn serial(bin: &Path) -> Duration {
    let tmp = tempfile::tempdir().unwrap();
    let start = Instant::now();
    for i in 0..PROCESSES {
        let out = request(bin, tmp.path(), i).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let took = start.elapsed();
    check(bin, tmp.path());
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    // `cargo test --benches` runs this without `--bench`: nothing to measure then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let Some(bin) = squad_bin() else {
        eprintln!(
            "approvals bench skipped: build the binary first (cargo build --release -p squad-cli)"
        );
        return;
    };
    // One warm-up of each (page cache, binary loaded), then interleaved rounds so that both
    // see the same machine load.
    concurrent(&bin);
    serial(&bin);
    let (mut conc, mut ser) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        conc.push(concurrent(&bin));
        ser.push(serial(&bin));
    }
    let (c, s) = (median(conc.clone()), median(ser.clone()));
    println!(
        "approval request x{PROCESSES}, distinct runs, median of {ROUNDS} rounds (min..max):\n  \
         concurrent processes: {c:>10.2?} ({:.2?}..{:.2?})\n  \
         serial (baseline):    {s:>10.2?} ({:.2?}..{:.2?})\n  \
         concurrent / serial:  {:.2}",
        conc.iter().min().unwrap(),
        conc.iter().max().unwrap(),
        ser.iter().min().unwrap(),
        ser.iter().max().unwrap(),
        c.as_secs_f64() / s.as_secs_f64()
    );
}
