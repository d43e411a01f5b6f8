//! Many memory writers at once: 32 `memory add`s started together against the same 32 adds one
//! after another, in the same run (issue 22).
//!
//! - **threads**: 32 threads of one process, each calling `squad_memory::add` through its own
//!   `FsStore` (a 30 s lock wait), released together by a barrier. Per add: the time from the
//!   call to its return (its wait in line plus its own work).
//! - **processes**: 32 `squad memory add` processes (the release binary, or `SQUAD_BIN`)
//!   started together, each with `-vv`, so that its wait for the lock is read from its
//!   `memory lock taken waited_ms=` debug line. Skipped when the binary is not built
//!   (`cargo build --release -p squad-cli`).
//!
//! Each run starts from an empty state directory and checks that every entry landed exactly
//! once. The serial baseline runs the same 32 adds one after another in a fresh directory, right
//! after, in every round; the figures are medians over the rounds (`SQUAD_BENCH_ROUNDS`,
//! default 5).
//!
//! Run: `cargo bench -p squad-bench --bench memory_writers`.
//!
//! Figures of the last runs (dev profile, `cargo bench --profile dev` with `SQUAD_BIN` the
//! debug binary: the release build did not fit the session; 2 cores shared with other builds,
//! load average 25 to 27; 3 rounds): threads 32 at once 403 ms total (p95 per add 362 ms)
//! against 289 ms serially (p95 24 ms), ratio 1.40, and in a run right before, 715 ms against
//! 793 ms, ratio 0.90; processes 32 at once 4.51 s total, p95 lock wait 2.84 s, against
//! 2.92 s serially (p95 wait 20 ms), ratio 1.54. Each add holds the lock for two fsyncs
//! (file and directory), so 32 of them queue behind ~20 ms each; every entry landed once.
#![expect(clippy::unwrap_used, reason = "a broken fixture should stop the bench")]
#![expect(clippy::print_stderr, reason = "the bench reports the figures")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use squad_bench::squad_bin;
use squad_memory::{Budget, DocRef, Entry, FsStore, Kind, MemoryStore, add};
use squad_model::AgentName;

const WRITERS: usize = 32;

fn who() -> AgentName {
    "data".parse().unwrap()
}

fn title(i: usize) -> String {
    format!("bench entry {i}")
}

/// Every add of a run landed exactly once.
fn check(state: &Path) {
    let hot = FsStore::new(state)
        .read(&DocRef::Hot(who()))
        .unwrap()
        .unwrap();
    for i in 0..WRITERS {
        assert_eq!(
            hot.matches(&format!("note: {}\n", title(i))).count(),
            1,
            "{}",
            title(i)
        );
    }
}

fn p95(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[(v.len() * 95 / 100).min(v.len() - 1)]
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn add_one(store: &FsStore, i: usize) -> Duration {
    let start = Instant::now();
    let e = Entry::new(
        "2026-11-30T10:00:00Z".parse().unwrap(),
        Kind::Note,
        title(i),
    );
    add(store, &who(), e, &Budget::default()).unwrap();
    start.elapsed()
}

fn store(state: &Path) -> FsStore {
    FsStore::new(state)
        .with_lock_wait(Duration::from_secs(30))
        .with_lock_command("bench add")
}

/// (total, per-add times) of 32 threads adding at once.
fn threads_at_once(state: &Path) -> (Duration, Vec<Duration>) {
    let barrier = Arc::new(Barrier::new(WRITERS + 1));
    let handles: Vec<_> = (0..WRITERS)
        .map(|i| {
            let s = store(state);
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                add_one(&s, i)
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    let each: Vec<Duration> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    (start.elapsed(), each)
}

fn threads_serial(state: &Path) -> (Duration, Vec<Duration>) {
    let s = store(state);
    let start = Instant::now();
    let each: Vec<Duration> = (0..WRITERS).map(|i| add_one(&s, i)).collect();
    (start.elapsed(), each)
}

fn squad_add(bin: &Path, state: &Path, i: usize) -> Command {
    let mut c = Command::new(bin);
    c.arg("--state-dir")
        .arg(state)
        .args(["-vv", "memory", "add", "--agent", "data", "--kind", "note"])
        .args(["--title", &title(i)])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// The wait a process logged (`memory lock taken waited_ms=<n>`).
fn logged_wait(stderr: &[u8]) -> Duration {
    let text = String::from_utf8_lossy(stderr);
    let at = text
        .find("waited_ms=")
        .unwrap_or_else(|| panic!("no wait logged: {text}"));
    let digits: String = text[at + "waited_ms=".len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Duration::from_millis(digits.parse().unwrap())
}

/// (total, per-process lock waits) of 32 processes started at once.
fn processes_at_once(bin: &Path, state: &Path) -> (Duration, Vec<Duration>) {
    let start = Instant::now();
    let children: Vec<_> = (0..WRITERS)
        .map(|i| squad_add(bin, state, i).spawn().unwrap())
        .collect();
    let waits = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            logged_wait(&out.stderr)
        })
        .collect();
    (start.elapsed(), waits)
}

fn processes_serial(bin: &Path, state: &Path) -> (Duration, Vec<Duration>) {
    let start = Instant::now();
    let waits = (0..WRITERS)
        .map(|i| {
            let out = squad_add(bin, state, i).output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            logged_wait(&out.stderr)
        })
        .collect();
    (start.elapsed(), waits)
}

/// Per round: (concurrent total, concurrent p95, serial total, serial p95).
type Round = (Duration, Duration, Duration, Duration);

fn rounds(n: usize, mut one: impl FnMut(&Path, &Path) -> Round) -> Round {
    let mut all = Vec::new();
    for _ in 0..n {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("at-once"), dir.path().join("serial"));
        all.push(one(&a, &b));
        check(&a);
        check(&b);
    }
    (
        median(all.iter().map(|r| r.0).collect()),
        median(all.iter().map(|r| r.1).collect()),
        median(all.iter().map(|r| r.2).collect()),
        median(all.iter().map(|r| r.3).collect()),
    )
}

fn report(what: &str, per: &str, r: Round) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    eprintln!(
        "  {what}: {WRITERS} at once {:.1} ms total, p95 {per} {:.2} ms; \
         serially {:.1} ms total, p95 {per} {:.2} ms; total ratio at once / serial {:.2}",
        ms(r.0),
        ms(r.1),
        ms(r.2),
        ms(r.3),
        r.0.as_secs_f64() / r.2.as_secs_f64()
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs it once with nothing to do.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let n: usize = std::env::var("SQUAD_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    eprintln!("memory writers ({n} rounds, medians):");
    let t = rounds(n, |a, b| {
        let (ta, ea) = threads_at_once(a);
        let (ts, es) = threads_serial(b);
        (ta, p95(ea), ts, p95(es))
    });
    report("threads, `squad_memory::add`", "time per add", t);
    let Some(bin): Option<PathBuf> = squad_bin() else {
        eprintln!(
            "  processes skipped: build the binary first (cargo build --release -p squad-cli)"
        );
        return;
    };
    let p = rounds(n, |a, b| {
        let (ta, wa) = processes_at_once(&bin, a);
        let (ts, ws) = processes_serial(&bin, b);
        (ta, p95(wa), ts, p95(ws))
    });
    report("processes, `squad memory add`", "lock wait", p);
}
