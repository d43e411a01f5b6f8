//! `squad doctor [--fix]`: what a killed process or a careless edit left behind.
//!
//! Reports git lock files that no running process holds (they block every later update of a
//! ref; one younger than two seconds is reported with the time left before it counts as left
//! over, and `--fix` waits that long for it), those a running process holds (left alone),
//! temporary files of writers that died, the memory lock's tickets of waiters that were killed,
//! interrupted state batches (approval state and the work-tree state store's journal), a
//! tampered `notifications.md`, and symbolic links or
//! special files under the state directory (never followed; each one needs a human look). It
//! also names the memory search indexes that are missing or out of date, which is not a
//! problem (a spawn reads the text instead, more slowly) and leaves the exit code alone.
//! `--fix` removes the stale locks and temporary files and completes interrupted batches; it
//! never touches a lock a live process holds and never rewrites the log.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use squad_fs::StateDir;
use squad_notes::state::{StateStore, WorktreeStateStore};
use squad_notify::{Approvals, SystemClock};

use crate::ctx::{CliError, CmdResult, Ctx, outln};

/// Arguments of `squad doctor`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  squad doctor\n  squad doctor --fix --json\n\n\
Exit codes: 0 all is well, 1 something needs attention (after --fix: something is left), 2 bad usage."
)]
pub(crate) struct Args {
    /// Remove stale locks and temporary files, and complete interrupted batches.
    #[arg(long)]
    fix: bool,
}

/// The state work tree store's batch record (see `WorktreeStateStore`).
const JOURNAL: &str = ".squad-journal";

/// Everything found, and what `--fix` did about it.
#[derive(Debug, Default)]
struct Report {
    stale_locks: Vec<(PathBuf, u64)>,
    /// Lock files younger than the stale threshold that no process has open: path, age and
    /// how long until they count as left over (milliseconds).
    young_locks: Vec<(PathBuf, u128, u128)>,
    /// Lock files a running process has open (never touched; not a problem by themselves).
    held_locks: Vec<(PathBuf, u64)>,
    temp_files: Vec<(PathBuf, u32)>,
    /// Tickets of the memory lock's queue whose process is gone: (path, pid, command).
    dead_tickets: Vec<(String, u32, String)>,
    interrupted: Vec<String>,
    /// Memory search indexes missing or out of date: (index, document), relative to the state
    /// directory. Not a problem by itself: `squad memory index` rebuilds them.
    stale_indexes: Vec<(String, String)>,
    tamper: Option<String>,
    problems: Vec<String>,
    fixed: Vec<String>,
}

impl Report {
    fn healthy(&self) -> bool {
        self.stale_locks.is_empty()
            && self.young_locks.is_empty()
            && self.temp_files.is_empty()
            && self.dead_tickets.is_empty()
            && self.interrupted.is_empty()
            && self.tamper.is_none()
            && self.problems.is_empty()
    }
}

pub(crate) fn run(args: &Args, ctx: &Ctx) -> CmdResult {
    let repo = ctx.repo_root()?;
    // A bare repository has no work tree, so no state directory unless one is named; a named
    // one must exist (a typo is not "all is well").
    let state = if ctx.bare_without_state_dir() {
        None
    } else {
        Some(ctx.existing_state_dir()?)
    };
    let mut report = Report::default();
    check_git_locks(&repo, args.fix, &mut report)?;
    if let Some(state) = state.filter(|s| s.is_dir()) {
        check_state_dir(&state, args.fix, &mut report)?;
    }
    print(ctx, &report, args.fix)?;
    Ok(if report.healthy() { 0 } else { 1 })
}

fn check_git_locks(repo: &Path, fix: bool, report: &mut Report) -> Result<(), CliError> {
    use squad_notes::health::{LockFile, LockFileState, lock_files};
    let look = || {
        lock_files(repo).map_err(|e| CliError::failure(format!("cannot look for lock files: {e}")))
    };
    let mut locks = look()?;
    // The remotes on this machine: a push there runs their `git receive-pack` here, and a
    // killed one leaves its lock file in the remote, where it blocks every later sync.
    for remote in local_remotes(repo) {
        if let Ok(found) = lock_files(&remote) {
            locks.extend(found);
        }
    }
    if fix {
        // A young lock file no process has open belongs to a writer about to finish, or to one
        // that was killed: wait until its age decides (at most STALE_AFTER), then look again.
        let wait = locks
            .iter()
            .map(LockFile::stale_in)
            .max()
            .unwrap_or_default();
        if !wait.is_zero() {
            std::thread::sleep(wait + std::time::Duration::from_millis(20));
            locks = look()?;
            for remote in local_remotes(repo) {
                if let Ok(found) = lock_files(&remote) {
                    locks.extend(found);
                }
            }
        }
    }
    for lock in locks {
        match lock.state {
            LockFileState::Open => {
                report.held_locks.push((lock.path, lock.age.as_secs()));
                continue;
            }
            LockFileState::Young => {
                report.young_locks.push((
                    lock.path.clone(),
                    lock.age.as_millis(),
                    lock.stale_in().as_millis(),
                ));
                continue;
            }
            _ => {}
        }
        if fix {
            match std::fs::remove_file(&lock.path) {
                Ok(()) => {
                    report
                        .fixed
                        .push(format!("removed stale lock {}", lock.path.display()));
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => report
                    .problems
                    .push(format!("cannot remove {}: {e}", lock.path.display())),
            }
        }
        report.stale_locks.push((lock.path, lock.age.as_secs()));
    }
    Ok(())
}

/// The repositories that the remotes of `repo` reached by a path (or a `file://` URL) are,
/// canonical and without duplicates; none when git cannot be asked.
fn local_remotes(repo: &Path) -> Vec<PathBuf> {
    let Ok(out) = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["config", "--get-regexp", r"^remote\..*\.url$"])
        .output()
    else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = Vec::new();
    let own = std::fs::canonicalize(repo).unwrap_or_else(|_| repo.to_owned());
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((_, url)) = line.split_once(' ') else {
            continue;
        };
        let path = match url.strip_prefix("file://") {
            Some(p) => PathBuf::from(p),
            // Another scheme, or scp-like `host:path`: not on this machine.
            None if url.contains("://") => continue,
            None if url
                .split_once(':')
                .is_some_and(|(host, _)| !host.contains('/')) =>
            {
                continue;
            }
            None => repo.join(url),
        };
        if let Ok(path) = std::fs::canonicalize(&path)
            && path.is_dir()
            && path != own
            && !found.contains(&path)
        {
            found.push(path);
        }
    }
    found
}

fn check_state_dir(state: &Path, fix: bool, report: &mut Report) -> Result<(), CliError> {
    let dir = StateDir::new(state);
    let fs_err = |e: squad_fs::Error| CliError::failure(e.to_string());

    // Approval state: interrupted batches, temporary files of state.json, tampering.
    let approvals = Approvals::new(dir.clone(), Arc::new(SystemClock));
    let health = if fix {
        let fixed = approvals
            .fix()
            .map_err(|e| CliError::failure(e.to_string()))?;
        report.fixed.extend(fixed.completed);
        report.fixed.extend(
            fixed
                .removed
                .iter()
                .map(|p| format!("removed temporary file {}", p.display())),
        );
        fixed.health
    } else {
        approvals
            .health()
            .map_err(|e| CliError::failure(e.to_string()))?
    };
    report.interrupted.extend(health.interrupted);
    report.tamper = health.tamper.map(|t| {
        format!(
            "notifications.md was tampered with ({}); run 'squad approval acknowledge-tamper' once you have looked",
            t.problem
        )
    });
    report.problems.extend(health.problems);

    // The work-tree state store's batch record: any reader completes it.
    if dir.kind(JOURNAL).map_err(fs_err)?.is_some() {
        if fix {
            WorktreeStateStore::new(state)
                .list("")
                .map_err(|e| CliError::failure(e.to_string()))?;
            report
                .fixed
                .push(format!("completed the state batch recorded in {JOURNAL}"));
        } else {
            report
                .interrupted
                .push(format!("a state batch recorded in {JOURNAL} was cut short"));
        }
    }

    // Temporary files of every writer under the state directory.
    if fix {
        for path in dir.remove_dead_temp_files("").map_err(fs_err)? {
            report
                .fixed
                .push(format!("removed temporary file {}", path.display()));
        }
    } else {
        for temp in dir.leftover_temp_files().map_err(fs_err)? {
            if !temp.writer_alive {
                report.temp_files.push((temp.path, temp.pid));
            }
        }
    }

    check_memory_queue(state, fix, report)?;
    check_memory_indexes(state, report);

    // Symbolic links and special files: never followed, never removed automatically.
    for finding in dir.audit().map_err(fs_err)? {
        // The approval checks name the same file when they meet it: one line per file is enough.
        let full = state.join(&finding.path).display().to_string();
        report.problems.retain(|p| !p.contains(&full));
        let line = match &finding.target {
            Some(t) => format!(
                "{} is a symbolic link to {} (never followed; remove it or replace it by a file)",
                finding.path.display(),
                t.display()
            ),
            None => format!(
                "{} is not a regular file (never read)",
                finding.path.display()
            ),
        };
        if !report.problems.contains(&line) {
            report.problems.push(line);
        }
    }
    Ok(())
}

/// The memory lock's queue: a waiter killed while in line leaves its ticket, which blocks no
/// one (the next writer removes it) but stays until someone comes; `--fix` removes it now.
fn check_memory_queue(state: &Path, fix: bool, report: &mut Report) -> Result<(), CliError> {
    let store = squad_memory::FsStore::new(state);
    let lib_err = |e: squad_memory::Error| CliError::failure(e.to_string());
    if fix {
        for t in store.remove_dead_tickets().map_err(lib_err)? {
            report.fixed.push(format!(
                "removed dead lock ticket {} (process {} is gone)",
                t.path, t.pid
            ));
        }
    } else {
        for t in store.lock_queue().map_err(lib_err)? {
            if !t.alive {
                report.dead_tickets.push((t.path, t.pid, t.command));
            }
        }
    }
    Ok(())
}

/// The memory search indexes that are missing or out of date (`--fix` leaves them: rebuilding
/// them takes the memory lock, which is `squad memory index`'s job).
fn check_memory_indexes(state: &Path, report: &mut Report) {
    match squad_memory::FsStore::new(state).stale_indexes() {
        Ok(docs) => report.stale_indexes.extend(docs.iter().map(|doc| {
            (
                format!("memory/{}", squad_memory::FsStore::index_path(doc)),
                format!("memory/{}", doc.path()),
            )
        })),
        Err(e) => report
            .problems
            .push(format!("cannot check the memory search indexes: {e}")),
    }
}

fn print(ctx: &Ctx, r: &Report, fix: bool) -> Result<(), CliError> {
    if ctx.json {
        let value: Value = json!({
            "healthy": r.healthy(),
            "stale_locks": r.stale_locks.iter().map(|(p, age)| json!({"path": p, "age_secs": age})).collect::<Vec<_>>(),
            "young_locks": r.young_locks.iter().map(|(p, age, left)| json!({"path": p, "age_ms": age, "stale_in_ms": left})).collect::<Vec<_>>(),
            "held_locks": r.held_locks.iter().map(|(p, age)| json!({"path": p, "age_secs": age})).collect::<Vec<_>>(),
            "temp_files": r.temp_files.iter().map(|(p, pid)| json!({"path": p, "pid": pid})).collect::<Vec<_>>(),
            "dead_tickets": r.dead_tickets.iter().map(|(p, pid, c)| json!({"path": p, "pid": pid, "command": c})).collect::<Vec<_>>(),
            "interrupted": r.interrupted,
            "stale_indexes": r.stale_indexes.iter().map(|(p, f)| json!({"path": p, "file": f})).collect::<Vec<_>>(),
            "tamper": r.tamper,
            "problems": r.problems,
            "fixed": r.fixed,
        });
        return ctx.print_json(&value);
    }
    for line in &r.fixed {
        outln!(ctx, "fixed: {line}")?;
    }
    for (path, age) in &r.stale_locks {
        outln!(
            ctx,
            "stale lock: {} ({age} s old, no process holds it; remove it, or run 'squad doctor --fix')",
            path.display()
        )?;
    }
    for (path, age, left) in &r.young_locks {
        outln!(
            ctx,
            "young lock: {} ({age} ms old, no process has it open; a writer may be finishing \
             with it, else it counts as left over in {left} ms: 'squad doctor --fix' waits that \
             long, then removes it)",
            path.display()
        )?;
    }
    for (path, age) in &r.held_locks {
        outln!(
            ctx,
            "lock held: {} ({age} s old, a running process has it open; left alone)",
            path.display()
        )?;
    }
    for (path, pid) in &r.temp_files {
        outln!(
            ctx,
            "temporary file: {} (its writer, process {pid}, is gone)",
            path.display()
        )?;
    }
    for (path, pid, command) in &r.dead_tickets {
        let what = if command.is_empty() {
            String::new()
        } else {
            format!(", `{command}`")
        };
        outln!(
            ctx,
            "dead lock ticket: {path} (its waiter, process {pid}{what}, is gone; it blocks no one)"
        )?;
    }
    for (path, file) in &r.stale_indexes {
        outln!(
            ctx,
            "stale index: {path} (missing or out of date for {file}; a spawn reads the text \
             instead, which is slower: run 'squad memory index')"
        )?;
    }
    for line in &r.interrupted {
        outln!(ctx, "interrupted: {line}")?;
    }
    if let Some(t) = &r.tamper {
        outln!(ctx, "tampered: {t}")?;
    }
    for line in &r.problems {
        outln!(ctx, "problem: {line}")?;
    }
    let fixable = !(r.stale_locks.is_empty()
        && r.young_locks.is_empty()
        && r.temp_files.is_empty()
        && r.dead_tickets.is_empty()
        && r.interrupted.is_empty());
    if r.healthy() {
        outln!(ctx, "all is well")?;
    } else if fixable && !fix {
        outln!(
            ctx,
            "run 'squad doctor --fix' to repair what can be repaired"
        )?;
    }
    Ok(())
}
