//! Health checks of a git repository that squad writes to: lock files left behind by processes
//! that were killed in the middle of an update.
//!
//! git (and gix) take a lock on a ref by creating `<ref>.lock` next to it (or `packed-refs.lock`
//! for the packed refs), write the new value into it, and rename it over the ref. A process
//! killed in between leaves the lock file behind, and every later update of that ref fails until
//! someone removes it. git says so at once (`Unable to create '….lock': File exists`); the
//! writers of this crate do the same: an update blocked by a lock that no running process holds
//! fails within a few seconds with [`ErrorKind::Locked`], naming the
//! file (see [`crate::Error::path`]), instead of retrying as if it had lost a race. The git
//! command-line transport turns git's own "File exists" failures into the same error (after
//! waiting for a lock a running git holds).
//!
//! [`stale_locks`] lists such files for a whole repository; `squad doctor` builds on it.
//!
//! **Who holds a lock.** git holds a ref lock for milliseconds, and gix does not even keep the
//! lock file open while it holds it, so a lock file's holder cannot always be seen. A lock file
//! counts as left over when it is at least [`STALE_AFTER`] old **and** no running process has
//! it open (on Linux, read from `/proc/<pid>/fd`; elsewhere age alone decides). So a writer
//! blocked by a lock a killed process left fails within a few seconds, and a lock a live
//! writer holds for a moment is waited for and retried.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::{Error, ErrorKind, Result};

/// A lock file younger than this is taken as held by a live writer.
pub const STALE_AFTER: Duration = Duration::from_secs(2);

/// A lock file that no running process holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleLock {
    /// The lock file.
    pub path: PathBuf,
    /// How long ago it was last modified (zero when the clock or the file system cannot say).
    pub age: Duration,
}

/// Lists the git lock files of the repository at `repo_dir` (a work tree, a linked work tree, a
/// `.git` directory or a bare repository) that no running process holds, sorted by path.
///
/// Looked at: `*.lock` files in the git directory and in the common directory (`index.lock`,
/// `HEAD.lock`, `packed-refs.lock`, `config.lock`, …), in the per-work-tree directories under
/// `worktrees/`, and below `refs/` and `logs/`. The advisory lock file squad's writers share
/// (`squad-notes.lock`, held with `flock`, never renamed) is not a git lock and is not listed.
///
/// Removing a listed file is safe when no git command is running in the repository; this
/// function itself removes nothing.
///
/// # Errors
///
/// [`ErrorKind::NotFound`] when `repo_dir` is not a git repository; [`ErrorKind::Backend`]
/// when a directory cannot be read.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// std::process::Command::new("git").args(["init", "-q"]).arg(dir.path()).status()?;
/// assert!(squad_notes::health::stale_locks(dir.path())?.is_empty());
/// // A lock left a minute ago by a killed `git update-ref`:
/// let lock = dir.path().join(".git/packed-refs.lock");
/// std::fs::write(&lock, "")?;
/// let a_minute_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
/// std::fs::File::options().write(true).open(&lock)?.set_modified(a_minute_ago)?;
/// let stale = squad_notes::health::stale_locks(dir.path())?;
/// assert!(stale[0].path.ends_with("packed-refs.lock"));
/// # Ok(()) }
/// ```
pub fn stale_locks(repo_dir: &Path) -> Result<Vec<StaleLock>> {
    Ok(lock_files(repo_dir)?
        .into_iter()
        .filter(|l| l.state == LockFileState::Stale)
        .map(|l| StaleLock {
            path: l.path,
            age: l.age,
        })
        .collect())
}

/// What a lock file found by [`lock_files`] is at the moment it was looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LockFileState {
    /// Left over: at least [`STALE_AFTER`] old and no running process has it open. It blocks
    /// every update of its ref until removed.
    Stale,
    /// Younger than [`STALE_AFTER`] and open in no process (where the system can tell): a
    /// writer may be finishing with it, or a killed one left it. Unless it goes away, it is
    /// [`LockFileState::Stale`] once [`STALE_AFTER`] old.
    Young,
    /// A running process has it open: a live writer holds it.
    Open,
}

/// A git lock file of a repository, whatever holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockFile {
    /// The lock file.
    pub path: PathBuf,
    /// How long ago it was last modified (zero when the clock or the file system cannot say).
    pub age: Duration,
    /// Whether it is left over, young, or held.
    pub state: LockFileState,
}

impl LockFile {
    /// How long until a [`LockFileState::Young`] lock file counts as left over (zero for the
    /// other states).
    pub fn stale_in(&self) -> Duration {
        match self.state {
            LockFileState::Young => STALE_AFTER.saturating_sub(self.age),
            _ => Duration::ZERO,
        }
    }
}

/// Every git lock file of the repository at `repo_dir` that [`stale_locks`] looks at, with its
/// state, sorted by path: what blocks a write now ([`LockFileState::Stale`]), what will in
/// less than [`STALE_AFTER`] unless its writer finishes ([`LockFileState::Young`]), and what a
/// running process holds ([`LockFileState::Open`]).
///
/// # Errors
///
/// As [`stale_locks`].
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use squad_notes::health::{LockFileState, lock_files};
/// let dir = tempfile::tempdir()?;
/// std::process::Command::new("git").args(["init", "-q"]).arg(dir.path()).status()?;
/// std::fs::write(dir.path().join(".git/packed-refs.lock"), "")?;
/// let found = lock_files(dir.path())?;
/// assert_eq!(found[0].state, LockFileState::Young);
/// assert!(found[0].stale_in() <= squad_notes::health::STALE_AFTER);
/// # Ok(()) }
/// ```
pub fn lock_files(repo_dir: &Path) -> Result<Vec<LockFile>> {
    let (git_dir, common_dir) = git_dirs(repo_dir)?;
    let mut candidates = Vec::new();
    let mut dirs = vec![git_dir.clone()];
    if common_dir != git_dir {
        dirs.push(common_dir.clone());
    }
    for dir in &dirs {
        top_level_locks(dir, &mut candidates)?;
        for sub in ["refs", "logs"] {
            walk_locks(&dir.join(sub), &mut candidates, 0)?;
        }
    }
    let worktrees = common_dir.join("worktrees");
    if let Ok(entries) = std::fs::read_dir(&worktrees) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                top_level_locks(&entry.path(), &mut candidates)?;
            }
        }
    }
    candidates.sort();
    candidates.dedup();
    let held = HeldFiles::new();
    Ok(candidates
        .into_iter()
        .filter_map(|path| {
            let age = age_of(&path)?;
            let state = if held.is_open(&path) {
                LockFileState::Open
            } else if age < STALE_AFTER {
                LockFileState::Young
            } else {
                LockFileState::Stale
            };
            Some(LockFile { path, age, state })
        })
        .collect())
}

/// The lock files that block an update of `ref_name` (its own `.lock` and `packed-refs.lock`)
/// and that are left over (see the module docs).
#[cfg(any(feature = "gix", feature = "git2"))]
fn blocking_locks(common_dir: &Path, ref_name: &str) -> Vec<StaleLock> {
    let mut candidates = vec![
        ref_lock_path(common_dir, ref_name),
        common_dir.join("packed-refs.lock"),
    ];
    candidates.retain(|p| p.exists());
    let held = HeldFiles::new();
    candidates
        .iter()
        .filter_map(|path| {
            let age = age_of(path)?;
            // A holder that let go while the processes were read is not a left-over lock.
            (!held.holds(path, age) && path.exists()).then(|| StaleLock {
                path: path.clone(),
                age,
            })
        })
        .collect()
}

/// The error of an update of `ref_name` that failed as `op` when a left-over lock file blocks
/// it (the first of [`blocking_locks`]): retrying cannot help. `None` when nothing blocks it.
#[cfg(any(feature = "gix", feature = "git2"))]
pub(crate) fn stale_lock_error(
    op: &'static str,
    common_dir: &Path,
    ref_name: &str,
) -> Option<Error> {
    blocking_locks(common_dir, ref_name)
        .first()
        .map(|lock| locked_error(op, ref_name, lock))
}

/// The lock file git and gix take to update the loose ref `ref_name`: `<common_dir>/<ref>.lock`.
#[cfg(any(feature = "gix", feature = "git2"))]
pub(crate) fn ref_lock_path(common_dir: &Path, ref_name: &str) -> PathBuf {
    let mut path = common_dir.to_owned();
    path.extend(ref_name.split('/'));
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".lock");
    path.set_file_name(name);
    path
}

/// What a lock file is at this moment, for a writer that met it.
#[derive(Debug)]
pub(crate) enum LockState {
    /// It is gone: retry.
    Gone,
    /// A live writer may hold it (young, or open in a process): wait and look again.
    Held,
    /// Left over: no retry will help.
    Stale(StaleLock),
}

/// The state of the lock file at `path`.
pub(crate) fn lock_state(path: &Path) -> LockState {
    let Some(age) = age_of(path) else {
        return LockState::Gone;
    };
    if HeldFiles::new().holds(path, age) {
        LockState::Held
    } else if !path.exists() {
        // Its holder let go while the processes were read: the file is gone, not left over.
        LockState::Gone
    } else {
        LockState::Stale(StaleLock {
            path: path.to_owned(),
            age,
        })
    }
}

/// The lock file that a failed git command says blocked it (`Unable to create '<x>.lock':
/// File exists`, `could not lock config file <x>: File exists`), resolved against `dir` (the
/// directory git ran in). Lines a remote sent (`remote: ...`) are not about this repository.
pub(crate) fn lock_in_git_message(stderr: &str, dir: &Path) -> Option<PathBuf> {
    stderr
        .lines()
        .filter(|l| !l.trim_start().starts_with("remote:"))
        .find_map(|line| {
            if let Some((_, rest)) = line.split_once("Unable to create '") {
                let (path, tail) = rest.split_once('\'')?;
                tail.contains("File exists").then(|| PathBuf::from(path))
            } else if let Some((_, rest)) = line.split_once("could not lock config file ") {
                let (path, _) = rest.split_once(": File exists")?;
                Some(PathBuf::from(format!("{path}.lock")))
            } else {
                None
            }
        })
        .map(|p| if p.is_absolute() { p } else { dir.join(p) })
}

/// The lock file a remote on this machine says blocked a push (`remote: error: … Unable to
/// create '<x>.lock': File exists`), when it names an absolute path: a remote reached by path
/// or `file://` runs its `git receive-pack` here, and a killed one leaves its lock behind just
/// as a local writer does. `.` components are dropped (`/srv/r.git/./refs/…`).
pub(crate) fn remote_lock_in_git_message(stderr: &str) -> Option<PathBuf> {
    stderr
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("remote:"))
        .find_map(|line| {
            let (_, rest) = line.split_once("Unable to create '")?;
            let (path, tail) = rest.split_once('\'')?;
            tail.contains("File exists").then(|| PathBuf::from(path))
        })
        .filter(|p| p.is_absolute())
        .map(|p| p.components().collect())
}

/// The error of an update of `what` blocked by the stale lock `lock`.
pub(crate) fn locked_error(op: &'static str, what: &str, lock: &StaleLock) -> Error {
    Error::new(
        ErrorKind::Locked,
        op,
        format!(
            "cannot update {what}: the lock file '{}' is left over ({} old, no running process holds it)",
            lock.path.display(),
            human(lock.age)
        ),
    )
    .with_path(lock.path.clone())
}

fn human(age: Duration) -> String {
    let secs = age.as_secs();
    match secs {
        0 => format!("{} ms", age.as_millis()),
        1..=119 => format!("{secs} s"),
        120..=7199 => format!("{} min", secs / 60),
        _ => format!("{} h", secs / 3600),
    }
}

fn age_of(path: &Path) -> Option<Duration> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    Some(
        meta.modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .unwrap_or_default(),
    )
}

fn top_level_locks(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(read_error(dir, e)),
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".lock")
            && name != "squad-notes.lock"
            && entry.file_type().is_ok_and(|t| t.is_file())
        {
            out.push(entry.path());
        }
    }
    Ok(())
}

fn walk_locks(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) -> Result<()> {
    if depth > 64 {
        return Ok(());
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(read_error(dir, e)),
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            walk_locks(&entry.path(), out, depth + 1)?;
        } else if kind.is_file() && entry.file_name().to_string_lossy().ends_with(".lock") {
            out.push(entry.path());
        }
    }
    Ok(())
}

fn read_error(dir: &Path, e: std::io::Error) -> Error {
    Error::new(
        ErrorKind::Backend,
        "health.locks",
        format!("cannot read {}", dir.display()),
    )
    .with_source(e)
}

/// The git directory and the common directory of the repository at `repo_dir`.
fn git_dirs(repo_dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let not_found = || {
        Error::new(
            ErrorKind::NotFound,
            "health.locks",
            format!("{} is not a git repository", repo_dir.display()),
        )
    };
    let dot_git = repo_dir.join(".git");
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else if dot_git.is_file() {
        // A linked work tree or a submodule: `gitdir: <path>`.
        let text = std::fs::read_to_string(&dot_git).map_err(|_| not_found())?;
        let target = text
            .lines()
            .find_map(|l| l.strip_prefix("gitdir:"))
            .map(str::trim)
            .ok_or_else(not_found)?;
        repo_dir.join(target)
    } else if repo_dir.join("HEAD").is_file() && repo_dir.join("objects").is_dir() {
        repo_dir.to_owned()
    } else {
        return Err(not_found());
    };
    let common_dir = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => git_dir.join(text.trim()),
        Err(_) => git_dir.clone(),
    };
    let canonical = |p: PathBuf| std::fs::canonicalize(&p).unwrap_or(p);
    Ok((canonical(git_dir), canonical(common_dir)))
}

/// The files open in running processes, when the system can tell. They are read (every
/// `/proc/<pid>/fd`) on the first [`HeldFiles::holds`] that needs them, at most once: a young
/// lock file is decided by its age alone.
struct HeldFiles {
    open: std::cell::OnceCell<Option<std::collections::HashSet<PathBuf>>>,
}

impl HeldFiles {
    /// Nothing is read yet.
    fn new() -> Self {
        Self {
            open: std::cell::OnceCell::new(),
        }
    }

    #[cfg(target_os = "linux")]
    fn scan() -> Option<std::collections::HashSet<PathBuf>> {
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return None;
        };
        let mut open = std::collections::HashSet::new();
        let mut readable = false;
        for proc_entry in procs.flatten() {
            let name = proc_entry.file_name();
            if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let Ok(fds) = std::fs::read_dir(proc_entry.path().join("fd")) else {
                continue;
            };
            readable = true;
            for fd in fds.flatten() {
                if let Ok(target) = std::fs::read_link(fd.path()) {
                    open.insert(target);
                }
            }
        }
        readable.then_some(open)
    }

    #[cfg(not(target_os = "linux"))]
    fn scan() -> Option<std::collections::HashSet<PathBuf>> {
        None
    }

    /// `true` when a live process may hold `path` (a lock file of age `age`): it is young, or
    /// a process has it open.
    fn holds(&self, path: &Path, age: Duration) -> bool {
        age < STALE_AFTER || self.is_open(path)
    }

    /// `true` when a running process has `path` open (never, where the system cannot say).
    fn is_open(&self, path: &Path) -> bool {
        match self.open.get_or_init(Self::scan) {
            Some(open) => {
                let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
                open.contains(&canonical) || open.contains(path)
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_messages_name_their_lock_file() {
        let dir = Path::new("/repo");
        let cases = [
            (
                "error: could not lock config file .git/config: File exists\n",
                Some("/repo/.git/config.lock"),
            ),
            (
                "error: cannot lock ref 'refs/notes/remotes/origin/squad/data': Unable to \
                 create '/r/.git/refs/notes/remotes/origin/squad/data.lock': File exists.\n\n\
                 Another git process seems to be running in this repository",
                Some("/r/.git/refs/notes/remotes/origin/squad/data.lock"),
            ),
            (
                "fatal: Unable to create '/r/.git/index.lock': File exists.",
                Some("/r/.git/index.lock"),
            ),
            // The remote's lock is the remote's business; other failures name no lock.
            (
                "remote: error: Unable to create '/srv/r.git/refs/heads/x.lock': File exists.",
                None,
            ),
            (
                "fatal: Unable to create '/r/.git/index.lock': Permission denied",
                None,
            ),
            ("fatal: could not read Username", None),
        ];
        for (stderr, want) in cases {
            assert_eq!(
                lock_in_git_message(stderr, dir),
                want.map(PathBuf::from),
                "{stderr}"
            );
        }
    }

    #[test]
    fn a_local_remote_names_its_lock_file() {
        let stderr = "remote: error: cannot lock ref 'refs/notes/squad/data': Unable to create \
                      '/srv/b.git/./refs/notes/squad/data.lock': File exists.        \n\
                      To ../b.git\n";
        assert_eq!(
            remote_lock_in_git_message(stderr),
            Some(PathBuf::from("/srv/b.git/refs/notes/squad/data.lock"))
        );
        // Not from the remote, relative, or another failure: none.
        for stderr in [
            "error: Unable to create '/r/.git/x.lock': File exists.",
            "remote: error: Unable to create 'refs/x.lock': File exists.",
            "remote: error: Unable to create '/r/x.lock': Permission denied",
        ] {
            assert_eq!(remote_lock_in_git_message(stderr), None, "{stderr}");
        }
    }

    #[test]
    fn a_lock_file_is_gone_held_or_stale() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("x.lock");
        assert!(matches!(lock_state(&lock), LockState::Gone));
        std::fs::write(&lock, "").unwrap();
        // Just created: a live writer may hold it.
        assert!(matches!(lock_state(&lock), LockState::Held));
        let then = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&lock)
            .unwrap()
            .set_modified(then)
            .unwrap();
        assert!(matches!(lock_state(&lock), LockState::Stale(s) if s.path == lock));
    }
}
