//! Kill at every file-changing system call (issue 14).
//!
//! Every state-changing command runs under
//! `strace -f -e inject=<syscall>:signal=SIGKILL:when=<n>`, for each file-changing syscall and
//! n = 1, 2, 3... until a run completes with no process killed (strace counts calls per process,
//! so a git child is killed at its own n-th call too). Each run starts from a fresh copy of the
//! scenario's prepared directory. After a kill:
//!
//! 1. what must hold at once is checked (nothing that was there before is lost or torn);
//! 2. the same command runs again, unkilled. When it fails because a lock file blocks it, the
//!    failure must come fast (under 5 s), name the lock file and say how to clear it; then
//!    `squad doctor --fix` runs and the command once more (counted in the table: git's own
//!    behaviour is the same, a lock a killed git leaves must be cleared by hand). The first
//!    time a lock file blocks a scenario's rerun, the rerun meets it fresh and must see by
//!    itself that no one holds it; later reruns blocked by the same file meet it aged a minute
//!    (as when the command is retried later), which saves waiting out the same seconds again;
//! 3. what must hold after recovery is checked: the command's effect is there exactly once,
//!    and `squad doctor` finds nothing left over (no temporary file, no stale lock, no
//!    interrupted batch). A lock the killed run left on a ref the rerun never touched is
//!    aged, must then be reported by `squad doctor`, and is cleared with `squad doctor --fix`
//!    (counted too).
//!
//! A state is torn when any check fails. Every run also traces the calls that change files;
//! kills after the same completed changes (the same calls on the same files, with temporary
//! and object names, written bytes and the working copy's path left out) leave the same state,
//! so they are counted as tried and share the verdict of the first such kill: a kill at a
//! read-only `openat` or at an `fsync` leaves what the change before it left. The table says
//! how many distinct states were checked.
//!
//! The crash table (command, crash points tried, distinct states, recovered, torn, and of the
//! recovered, how many needed `doctor --fix` for a lock blocking the rerun or left beside it)
//! is written to `<target tmp>/crash-table.md` (one `crash-table.<group>.md` per test,
//! combined in a fixed order) and printed (`cargo test crash_ -- --nocapture`).
//!
//! strace comes from the distribution (`apt-get install -y strace`). Without it (or where
//! ptrace is not allowed) the tests say so and pass, unless `SQUAD_REQUIRE_STRACE=1` (set by
//! CI, which installs it), when a missing strace is a failure.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the table, skip notes and debugging output are this test's report"
)]

mod approval;
mod memory;
mod notes;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use tempfile::TempDir;

/// The file-changing system calls a kill is injected at. A kill at one a command never makes
/// costs one run (n = 1 completes unkilled).
pub(crate) const FILE_SYSCALLS: [&str; 14] = [
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

/// [`FILE_SYSCALLS`] and what git itself uses besides them (`link` to publish a loose object,
/// `ftruncate`), for commands that run git.
pub(crate) const GIT_SYSCALLS: [&str; 17] = [
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
    "link",
    "linkat",
    "ftruncate",
];

/// A failed run that took longer than this, blocked by a lock, is a failure (issue 14).
const LOCK_FAILS_WITHIN: Duration = Duration::from_secs(5);

/// A prepared directory: what a scenario starts from, and the `HOME` its commands see.
pub(crate) struct Fixture {
    dir: TempDir,
    home: TempDir,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        let f = Fixture {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        };
        // Repositories without git's sample hooks: fewer files to copy for every crash point.
        let template = f.home().join("template");
        std::fs::create_dir(&template).unwrap();
        std::fs::write(
            f.home().join(".gitconfig"),
            format!("[init]\n\ttemplateDir = {}\n", template.display()),
        )
        .unwrap();
        f
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn home(&self) -> &Path {
        self.home.path()
    }

    /// An [`Env`] on the fixture itself (for building it).
    pub(crate) fn env(&self) -> Env<'_> {
        Env {
            root: self.path(),
            home: self.home(),
        }
    }
}

/// Runs programs in one copy (or the fixture itself) with the fixture's isolated environment.
#[derive(Clone, Copy)]
pub(crate) struct Env<'a> {
    pub(crate) root: &'a Path,
    pub(crate) home: &'a Path,
}

impl Env<'_> {
    /// `squad -C <root>/<dir> <args>`.
    pub(crate) fn squad(&self, dir: &str, args: &[&str], stdin: Option<&str>) -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_squad"));
        c.arg("-C").arg(self.root.join(dir)).args(args);
        self.isolate(&mut c);
        run(c, stdin)
    }

    /// [`Env::squad`], asserting exit 0 (for building fixtures); returns stdout.
    #[track_caller]
    pub(crate) fn ok(&self, dir: &str, args: &[&str]) -> String {
        let o = self.squad(dir, args, None);
        assert_eq!(
            o.status.code(),
            Some(0),
            "squad {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }

    /// `git <args>` in `<root>/<dir>`: its output, or an error with git's message.
    pub(crate) fn try_git(&self, dir: &str, args: &[&str]) -> Result<String, String> {
        let mut c = Command::new("git");
        c.current_dir(self.root.join(dir)).args(args);
        self.isolate(&mut c);
        let o = run(c, None);
        if o.status.success() {
            Ok(String::from_utf8_lossy(&o.stdout).into_owned())
        } else {
            Err(format!(
                "git {args:?} in {dir}: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ))
        }
    }

    /// [`Env::try_git`], asserting success (for building fixtures).
    #[track_caller]
    pub(crate) fn git(&self, dir: &str, args: &[&str]) -> String {
        self.try_git(dir, args).unwrap()
    }

    /// [`crate::git_repo::isolate`] with the fixture's `HOME`, and no webhook secret either.
    fn isolate(&self, c: &mut Command) {
        crate::git_repo::isolate(c, self.home);
        c.env_remove("SQUAD_WEBHOOK_SECRET");
    }
}

/// How long any program the tests run may take: a hang (a killed process's peer waiting for
/// it forever) fails the test instead of holding CI.
const TIMEOUT: Duration = Duration::from_secs(120);

fn run(mut c: Command, stdin: Option<&str>) -> Output {
    use std::os::unix::process::CommandExt;
    let what = format!("{c:?}");
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = c.spawn().unwrap();
    if let Some(input) = stdin {
        // A command that exits before reading its input closes the pipe: not our failure.
        let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
    }
    drop(child.stdin.take());
    let group = child.id();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        let late = matches!(
            finished.recv_timeout(TIMEOUT),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout)
        );
        if late {
            // The process group this test started (the program and whatever it ran).
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{group}")])
                .status();
        }
        late
    });
    let out = child.wait_with_output().unwrap();
    let _ = done.send(());
    assert!(
        !watchdog.join().unwrap(),
        "timed out after {TIMEOUT:?}: {what}"
    );
    out
}

/// What a check returns: `Err` describes a torn state.
pub(crate) type Check<T = ()> = Result<T, String>;

/// Run on each fresh copy before the command.
type Prepare = Box<dyn Fn(Env<'_>)>;
/// Checks right after a kill; what it returns is handed to the recovery check.
type AfterKill = Box<dyn Fn(Env<'_>) -> Check<Value>>;
/// Checks after the rerun (its output given); the value is what the kill check returned.
type AfterRecovery = Box<dyn Fn(Env<'_>, &Value, &Output) -> Check>;

/// One state-changing command and what must hold after a kill and after recovery.
pub(crate) struct Scenario {
    /// The row of the crash table (without `squad`).
    pub(crate) name: String,
    /// The fixture it starts from (built once).
    pub(crate) fixture: Fixture,
    /// The directory (under the fixture) the command runs in.
    pub(crate) dir: &'static str,
    /// Its arguments after `-C <dir>`.
    pub(crate) args: Vec<String>,
    pub(crate) stdin: Option<String>,
    /// Where kills are injected.
    pub(crate) syscalls: &'static [&'static str],
    /// Run on every fresh copy before the command (e.g. point a clone at its remote).
    pub(crate) prepare: Option<Prepare>,
    /// Whether a rerun's exit code is a success (default: 0).
    pub(crate) rerun_ok: fn(Option<i32>) -> bool,
    pub(crate) after_kill: AfterKill,
    pub(crate) after_recovery: AfterRecovery,
    /// Where its working copies go (default: a directory of the test's own).
    pub(crate) work_dir: Option<PathBuf>,
}

impl Scenario {
    pub(crate) fn new(name: &str, fixture: Fixture, dir: &'static str, args: &[&str]) -> Self {
        Scenario {
            name: name.to_owned(),
            fixture,
            dir,
            args: args.iter().map(|s| (*s).to_owned()).collect(),
            stdin: None,
            syscalls: &FILE_SYSCALLS,
            prepare: None,
            rerun_ok: |code| code == Some(0),
            after_kill: Box::new(|_| Ok(Value::Null)),
            after_recovery: Box::new(|_, _, _| Ok(())),
            work_dir: None,
        }
    }

    pub(crate) fn syscalls(mut self, list: &'static [&'static str]) -> Self {
        self.syscalls = list;
        self
    }

    pub(crate) fn stdin(mut self, text: &str) -> Self {
        self.stdin = Some(text.to_owned());
        self
    }

    pub(crate) fn prepare(mut self, f: impl Fn(Env<'_>) + 'static) -> Self {
        self.prepare = Some(Box::new(f));
        self
    }

    pub(crate) fn rerun_ok(mut self, f: fn(Option<i32>) -> bool) -> Self {
        self.rerun_ok = f;
        self
    }

    pub(crate) fn after_kill(mut self, f: impl Fn(Env<'_>) -> Check<Value> + 'static) -> Self {
        self.after_kill = Box::new(f);
        self
    }

    pub(crate) fn after_recovery(
        mut self,
        f: impl Fn(Env<'_>, &Value, &Output) -> Check + 'static,
    ) -> Self {
        self.after_recovery = Box::new(f);
        self
    }
}

/// One row of the crash table.
#[derive(Debug, Default)]
struct Row {
    tried: usize,
    distinct: usize,
    recovered: usize,
    /// Recovered after `doctor --fix` because a lock file blocked the rerun.
    blocked: usize,
    /// Recovered after `doctor --fix` cleared a lock file the rerun did not meet.
    beside: usize,
}

/// How one state recovered.
#[derive(Debug, Clone, Copy)]
struct Recovery {
    /// A lock file blocked the rerun until `doctor --fix`.
    blocked: bool,
    /// A lock file the rerun did not meet was left for `doctor --fix`.
    beside: bool,
}

fn strace_works() -> bool {
    let tmp = tempfile::tempdir().unwrap();
    Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "true"])
        .current_dir(tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether the crash tests can run; a missing strace fails under `SQUAD_REQUIRE_STRACE=1`.
pub(crate) fn available() -> bool {
    if strace_works() {
        return true;
    }
    let required = std::env::var("SQUAD_REQUIRE_STRACE").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "strace is required (SQUAD_REQUIRE_STRACE=1) but does not work here"
    );
    eprintln!(
        "note: strace is not available (apt-get install -y strace); the kill test is skipped"
    );
    false
}

/// Runs every scenario of one group, writes the group's rows of the crash table and fails
/// with every torn state found.
pub(crate) fn run_group(group: &str, scenarios: Vec<Scenario>) {
    let started = Instant::now();
    let scratch = tempfile::tempdir().unwrap();
    let mut rows = String::new();
    let mut failures = Vec::new();
    // A debugging aid: `SQUAD_CRASH_ONLY=<part of a name>` runs only those (no table).
    let only = std::env::var("SQUAD_CRASH_ONLY").ok();
    for (i, sc) in scenarios.iter().enumerate() {
        if only.as_ref().is_some_and(|o| !sc.name.contains(o.as_str())) {
            continue;
        }
        let dir = (sc.work_dir.clone()).unwrap_or_else(|| scratch.path().join(i.to_string()));
        let row = run_scenario(sc, &dir, &mut failures);
        assert!(row.tried > 0, "{}: no crash point was hit", sc.name);
        rows.push_str(&format!(
            "| `squad {}` | {} | {} | {} | {} | {} | {} |\n",
            sc.name,
            row.tried,
            row.distinct,
            row.recovered,
            row.tried - row.recovered,
            row.blocked,
            row.beside
        ));
    }
    if only.is_none() {
        write_table(group, &rows, started.elapsed());
    } else {
        println!("{rows}");
    }
    assert!(failures.is_empty(), "torn states:\n{}", failures.join("\n"));
}

/// Runs `sc` with `scratch` as the parent of its working copies.
fn run_scenario(sc: &Scenario, scratch: &Path, failures: &mut Vec<String>) -> Row {
    std::fs::create_dir_all(scratch).unwrap();
    let mut row = Row::default();
    // The verdict of each crash position (the changes made before the kill), and the lock
    // files whose blocking has been timed once.
    let mut seen: HashMap<Vec<String>, Result<Recovery, String>> = HashMap::new();
    let mut waited = HashSet::new();
    let debug = std::env::var_os("SQUAD_CRASH_DEBUG").is_some();
    let mut copies = 0usize;
    for syscall in sc.syscalls {
        for n in 1..=5000 {
            copies += 1;
            let work = scratch.join(format!("w{copies}"));
            copy_tree(sc.fixture.path(), &work);
            let env = Env {
                root: &work,
                home: sc.fixture.home(),
            };
            if let Some(prepare) = &sc.prepare {
                prepare(env);
            }
            let log = scratch.join(format!("w{copies}.strace"));
            let t = Instant::now();
            let killed = run_killed(sc, env, syscall, n, &log);
            if debug {
                eprintln!("{} {syscall} #{n}: run {:?}", sc.name, t.elapsed());
            }
            let _ = std::fs::remove_file(&log);
            let Some(Killed { call, done }) = killed else {
                let _ = std::fs::remove_dir_all(&work);
                break;
            };
            row.tried += 1;
            let verdict = match seen.get(&done) {
                Some(v) => v.clone(),
                None => {
                    row.distinct += 1;
                    let t = Instant::now();
                    let v = recover(sc, env, &mut waited);
                    if debug {
                        eprintln!(
                            "{} {syscall} #{n} ({call}) after {} changes: {:?} {v:?}\n  {}",
                            sc.name,
                            done.len(),
                            t.elapsed(),
                            done.join("\n  ")
                        );
                    }
                    seen.insert(done, v.clone());
                    v
                }
            };
            match verdict {
                Ok(r) => {
                    row.recovered += 1;
                    row.blocked += usize::from(r.blocked);
                    row.beside += usize::from(r.beside);
                }
                Err(e) => failures.push(format!(
                    "{} killed at {syscall} #{n} ({call}): {e}",
                    sc.name
                )),
            }
            let _ = std::fs::remove_dir_all(&work);
        }
    }
    row
}

/// The system calls that change files, traced in every run to tell crash positions apart
/// (`?`: no error where the architecture lacks one).
const CHANGES: [&str; 25] = [
    "?open",
    "?openat",
    "?openat2",
    "?creat",
    "?write",
    "?pwrite64",
    "?writev",
    "?pwritev",
    "?pwritev2",
    "?rename",
    "?renameat",
    "?renameat2",
    "?unlink",
    "?unlinkat",
    "?rmdir",
    "?mkdir",
    "?mkdirat",
    "?link",
    "?linkat",
    "?symlink",
    "?symlinkat",
    "?ftruncate",
    "?truncate",
    "?fallocate",
    "?fchmod",
];

/// A run that was killed.
struct Killed {
    /// The call a process was killed at, as strace shows it.
    call: String,
    /// The changes to files completed before the kill, in order, normalized (see
    /// [`normalize`]): two kills with the same changes leave the same state.
    done: Vec<String>,
}

/// Runs the command under strace, killed at the `n`-th `syscall` of each of its processes.
/// `None` when no process was killed (the command ran to its end).
fn run_killed(sc: &Scenario, env: Env<'_>, syscall: &str, n: usize, log: &Path) -> Option<Killed> {
    let mut c = Command::new("strace");
    c.args(["-f", "-q", "-y", "-s", "0", "-o"])
        .arg(log)
        .arg("-e")
        .arg(format!("trace={syscall},{}", CHANGES.join(",")))
        .arg("-e")
        .arg(format!("inject={syscall}:signal=SIGKILL:when={n}"))
        .arg(env!("CARGO_BIN_EXE_squad"))
        .arg("-C")
        .arg(env.root.join(sc.dir))
        .args(&sc.args);
    env.isolate(&mut c);
    let o = run(c, sc.stdin.as_deref());
    let text = std::fs::read_to_string(log).unwrap_or_default();
    if text.is_empty() && !o.status.success() {
        // strace refused (a syscall this architecture does not have): nothing to inject.
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("nvalid"), "strace failed: {err}");
        return None;
    }
    // Calls interleaved between processes come in two parts: `<unfinished ...>`, then
    // `<... name resumed>`.
    let mut pending: HashMap<&str, &str> = HashMap::new();
    let mut last: HashMap<&str, String> = HashMap::new();
    let mut killed = None;
    let mut done = Vec::new();
    for line in text.lines() {
        let Some((pid, rest)) = line.split_once(' ') else {
            continue;
        };
        let rest = rest.trim_start();
        if rest.starts_with("+++ killed by SIGKILL") {
            killed.get_or_insert(pid);
            continue;
        }
        if rest.starts_with("+++") || rest.starts_with("---") {
            continue;
        }
        if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            pending.insert(pid, head);
            continue;
        }
        let call = match rest.strip_prefix("<... ") {
            Some(tail) => {
                let tail = tail.split_once(" resumed>").map_or(tail, |(_, t)| t);
                format!("{}{tail}", pending.remove(pid).unwrap_or_default())
            }
            None => rest.to_owned(),
        };
        if let Some(change) = normalize(&call, env.root) {
            done.push(change);
        }
        last.insert(pid, call);
    }
    let pid = killed?;
    // The call it was killed at: unfinished, or shown with ` = ?`.
    let call = match pending.get(pid) {
        Some(head) => (*head).to_owned(),
        None => last.get(pid).cloned().unwrap_or_default(),
    };
    Some(Killed {
        call: call.chars().take(160).collect(),
        done,
    })
}

/// The change a completed call made, with what differs between runs of the same crash
/// position taken out: the working copy's path, random temporary names, object names (they
/// hash times and random ids), written bytes. `None` for a call that changed no file (failed,
/// not completed, a read-only open, a write to a pipe).
fn normalize(call: &str, root: &Path) -> Option<String> {
    let (head, result) = call.rsplit_once(" = ")?;
    if result.starts_with('?') || result.starts_with('-') {
        return None;
    }
    let name = head.split('(').next().unwrap_or_default();
    let opens = matches!(name, "open" | "openat" | "openat2" | "creat");
    if opens && name != "creat" && !head.contains("O_CREAT") && !head.contains("O_TRUNC") {
        return None;
    }
    let writes = matches!(
        name,
        "write" | "pwrite64" | "writev" | "pwritev" | "pwritev2"
    );
    // Keep a write's file, not its bytes: `write(4</path/file>, ...`.
    let head = if writes || name == "ftruncate" || name == "fallocate" || name == "fchmod" {
        let file = head.split_once('<')?.1.split_once('>')?.0;
        if !file.starts_with('/') || file.starts_with("/dev/") {
            return None;
        }
        format!("{name} {file}")
    } else {
        head.to_owned()
    };
    let root = root.to_string_lossy();
    let head = head.replace(root.as_ref(), "W");
    let objects = head.contains("/objects/");
    // Whether git creates an object's fan-out directory depends on the object's name.
    if objects && name.starts_with("mkdir") {
        return None;
    }
    let mut out = String::new();
    for token in head.split_inclusive(['"', '<', '>', ',', '(', ')', ' ']) {
        let (word, sep) = token
            .split_at(token.len() - token.ends_with(['"', '<', '>', ',', '(', ')', ' ']) as usize);
        let parts: Vec<&str> = word
            .split('/')
            .map(|part| {
                let random = part.starts_with(".tmp")
                    || part.starts_with("tmp_")
                    || part.contains(".tmp-")
                    || (objects && part.len() >= 2 && part.bytes().all(|b| b.is_ascii_hexdigit()));
                if random { "*" } else { part }
            })
            .collect();
        out.push_str(&parts.join("/"));
        out.push_str(sep);
    }
    Some(out)
}

/// The checks after one kill (see the module docs). `waited` holds the lock files whose
/// blocking the scenario has already timed: a rerun blocked by one of those again first ages
/// it (as if retried a few seconds later) instead of waiting out the same seconds once more.
fn recover(sc: &Scenario, env: Env<'_>, waited: &mut HashSet<PathBuf>) -> Result<Recovery, String> {
    let kept = (sc.after_kill)(env).map_err(|e| format!("after the kill: {e}"))?;
    let locks = git_locks(env.root);
    if !locks.is_empty() && locks.iter().all(|l| waited.contains(l)) {
        age_git_locks(env.root);
    }
    waited.extend(locks);
    let args: Vec<&str> = sc.args.iter().map(String::as_str).collect();
    let started = Instant::now();
    let mut rerun = env.squad(sc.dir, &args, sc.stdin.as_deref());
    let (mut blocked, mut beside) = (false, false);
    if !(sc.rerun_ok)(rerun.status.code()) {
        let err = String::from_utf8_lossy(&rerun.stderr).into_owned();
        let took = started.elapsed();
        if !err.contains(".lock") {
            return Err(format!(
                "rerun exit {:?}: {}",
                rerun.status.code(),
                err.trim()
            ));
        }
        if took > LOCK_FAILS_WITHIN {
            return Err(format!(
                "blocked by a lock, the rerun took {took:?}: {}",
                err.trim()
            ));
        }
        if !err.contains("hint:") {
            return Err(format!(
                "blocked by a lock, the rerun does not say how to clear it: {}",
                err.trim()
            ));
        }
        doctor_fix(env, sc.dir)?;
        blocked = true;
        rerun = env.squad(sc.dir, &args, sc.stdin.as_deref());
        if !(sc.rerun_ok)(rerun.status.code()) {
            return Err(format!(
                "rerun after `doctor --fix` exit {:?}: {}",
                rerun.status.code(),
                String::from_utf8_lossy(&rerun.stderr).trim()
            ));
        }
    }
    // Locks the killed run left where the rerun did not go: as time passes they turn stale,
    // and doctor must then report and clear them.
    if age_git_locks(env.root) {
        let o = env.squad(sc.dir, &["--json", "doctor"], None);
        let report = String::from_utf8_lossy(&o.stdout);
        if o.status.code() != Some(1) || !report.contains(".lock") {
            return Err(format!(
                "a left-over lock file is not reported by doctor: {report}"
            ));
        }
        doctor_fix(env, sc.dir)?;
        beside = true;
    }
    let o = env.squad(sc.dir, &["--json", "doctor"], None);
    if o.status.code() != Some(0) {
        return Err(format!(
            "doctor after the rerun: {} {}",
            String::from_utf8_lossy(&o.stdout).trim(),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    (sc.after_recovery)(env, &kept, &rerun).map_err(|e| format!("after the rerun: {e}"))?;
    Ok(Recovery { blocked, beside })
}

fn doctor_fix(env: Env<'_>, dir: &str) -> Check {
    let o = env.squad(dir, &["--json", "doctor", "--fix"], None);
    if o.status.code() == Some(0) {
        Ok(())
    } else {
        Err(format!(
            "doctor --fix exit {:?}: {} {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).trim(),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

/// The git lock files under `root` (relative to it), but squad's advisory `squad-notes.lock`.
fn git_locks(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    walk(root, &mut |path, is_dir| {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let rel = path.strip_prefix(root).unwrap();
        if !is_dir
            && name.ends_with(".lock")
            && name != "squad-notes.lock"
            && rel
                .components()
                .any(|c| c.as_os_str() == ".git" || c.as_os_str() == "remote.git")
        {
            found.push(rel.to_owned());
        }
    });
    found
}

/// Sets the modification time of every git lock file under `root` a minute back; `true` when
/// there was one.
fn age_git_locks(root: &Path) -> bool {
    let locks = git_locks(root);
    for l in &locks {
        age(&root.join(l));
    }
    !locks.is_empty()
}

/// Sets the modification time of `file` a minute back.
pub(crate) fn age(file: &Path) {
    let then = SystemTime::now() - Duration::from_secs(60);
    let f = std::fs::File::options().write(true).open(file).unwrap();
    f.set_modified(then).unwrap();
}

fn walk(dir: &Path, f: &mut dyn FnMut(&Path, bool)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.map(|e| e.unwrap()).collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for e in entries {
        let path = e.path();
        let t = e.file_type().unwrap();
        f(&path, t.is_dir());
        if t.is_dir() {
            walk(&path, f);
        }
    }
}

/// Copies the tree at `from` to `to` (files, directories, symbolic links).
pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        let dest = to.join(e.file_name());
        if t.is_dir() {
            copy_tree(&e.path(), &dest);
        } else if t.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), &dest).unwrap();
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// The order of the groups in the combined table.
const GROUPS: [&str; 7] = [
    "approval",
    "notes-write",
    "notes-ledger",
    "notes-remote",
    "memory-write",
    "memory-scribe",
    "doctor",
];

/// Writes this group's rows and rebuilds the combined table from every group's rows.
fn write_table(group: &str, rows: &str, took: Duration) {
    // The groups run in parallel in this process: one rebuilds the table at a time.
    static TABLE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = TABLE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(
        dir.join(format!("crash-table.{group}.md")),
        format!("{rows}<!-- {group}: {:.1} s -->\n", took.as_secs_f64()),
    )
    .unwrap();
    let mut table = String::from(
        "| command | crash points tried | distinct states | recovered | torn | of which a lock blocked the rerun until `doctor --fix` | of which `doctor --fix` cleared a lock the rerun did not meet |\n\
         |---|---|---|---|---|---|---|\n",
    );
    let mut times = Vec::new();
    for g in GROUPS {
        if let Ok(text) = std::fs::read_to_string(dir.join(format!("crash-table.{g}.md"))) {
            for line in text.lines() {
                if let Some(t) = line.strip_prefix("<!-- ") {
                    times.push(t.trim_end_matches(" -->").to_owned());
                } else {
                    table.push_str(line);
                    table.push('\n');
                }
            }
        }
    }
    table.push_str(&format!("\nTime per test: {}\n", times.join(", ")));
    std::fs::write(dir.join("crash-table.md"), &table).unwrap();
    println!("{rows}");
}

/// Counts the lines of `text` equal to `line`.
pub(crate) fn count_lines(text: &str, line: &str) -> usize {
    text.lines().filter(|l| *l == line).count()
}

/// Every line of `before` is a line of `after` (as many times at least).
pub(crate) fn lines_kept(what: &str, before: &str, after: &str) -> Check {
    let mut have: HashMap<&str, usize> = HashMap::new();
    for l in after.lines() {
        *have.entry(l).or_default() += 1;
    }
    for l in before.lines() {
        match have.get_mut(l) {
            Some(n) if *n > 0 => *n -= 1,
            _ => return Err(format!("{what}: a line is gone: {l:?}")),
        }
    }
    Ok(())
}

#[test]
fn crash_approval() {
    if available() {
        run_group("approval", approval::scenarios());
    }
}

#[test]
fn crash_notes_write() {
    if available() {
        run_group("notes-write", notes::write_scenarios());
    }
}

#[test]
fn crash_notes_ledger() {
    if available() {
        run_group("notes-ledger", notes::ledger_scenarios());
    }
}

#[test]
fn crash_notes_remote() {
    if available() {
        run_group("notes-remote", notes::remote_scenarios());
    }
}

#[test]
fn crash_memory_write() {
    if available() {
        run_group("memory-write", memory::write_scenarios());
    }
}

#[test]
fn crash_memory_scribe() {
    if available() {
        run_group("memory-scribe", memory::scribe_scenarios());
    }
}

#[test]
fn crash_doctor() {
    if available() {
        run_group("doctor", memory::doctor_scenarios());
    }
}
