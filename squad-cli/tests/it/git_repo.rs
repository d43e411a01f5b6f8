//! Real git repositories in temporary directories, with an isolated git configuration, and the
//! `squad` binary run inside them: one repository ([`Repo`]) or two clones of a bare remote
//! ([`Clones`]), shared by the CLI tests.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use tempfile::TempDir;

/// `approval request` for an autopilot risk gate whose topic, awaiting and detail are one
/// letter each.
pub(crate) const RISK_GATE_REQUEST: [&str; 12] = [
    "approval",
    "request",
    "--mode",
    "autopilot",
    "--trigger",
    "risk-gate",
    "--topic",
    "t",
    "--awaiting",
    "a",
    "--detail",
    "d",
];

/// A repository with one empty commit on `main` and its own `HOME`.
pub(crate) struct Repo {
    dir: TempDir,
    home: TempDir,
}

impl Repo {
    pub(crate) fn new() -> Self {
        let repo = Repo {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.git(&["config", "user.name", "Squad Test"]);
        repo.git(&["config", "user.email", "squad@test.invalid"]);
        repo.git(&["commit", "-q", "--allow-empty", "-m", "first"]);
        repo
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn env(&self, c: &mut Command) {
        isolate(c, self.home.path());
    }

    #[track_caller]
    pub(crate) fn git(&self, args: &[&str]) -> String {
        self.git_at(self.path(), args)
    }

    /// Runs `git <args>` in `dir` (this repository's or another) with this repository's `HOME`;
    /// asserts it succeeds and returns its output.
    #[track_caller]
    pub(crate) fn git_at(&self, dir: &Path, args: &[&str]) -> String {
        git_in(dir, self.home.path(), args)
    }

    pub(crate) fn tip(&self, ns: &str) -> Option<String> {
        let mut c = Command::new("git");
        c.current_dir(self.path()).args([
            "rev-parse",
            "-q",
            "--verify",
            &format!("refs/notes/squad/{ns}"),
        ]);
        self.env(&mut c);
        let out = c.output().unwrap();
        out.status
            .success()
            .then(|| String::from_utf8(out.stdout).unwrap())
    }

    /// `squad -C <repo> <args>`, not yet run.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        squad_in(self.path(), self.home.path(), args)
    }

    /// Runs `squad -C <repo> <args>`.
    pub(crate) fn squad(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Every ref with its object id, one per line.
    pub(crate) fn refs(&self) -> String {
        self.git(&["for-each-ref", "--format=%(refname) %(objectname)"])
    }
}

/// A bare remote `remote.git` with one commit on `main` (its message `seed`), and two clones
/// of it, `a` and `b`, each set up with `squad notes setup`, sharing one `HOME`.
pub(crate) struct Clones {
    dir: TempDir,
    home: TempDir,
}

impl Clones {
    pub(crate) fn new(seed: &str) -> Self {
        let w = Clones {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        };
        let root = w.root();
        w.git(root, &["init", "-q", "--bare", "-b", "main", "remote.git"]);
        w.git(root, &["init", "-q", "-b", "main", "seed"]);
        w.git(
            &root.join("seed"),
            &["commit", "-q", "--allow-empty", "-m", seed],
        );
        w.git(&root.join("seed"), &["push", "-q", "../remote.git", "main"]);
        for clone in ["a", "b"] {
            w.git(root, &["clone", "-q", "remote.git", clone]);
            w.ok(&w.path(clone), &["notes", "setup"], None);
        }
        w
    }

    /// The directory holding the remote and the clones.
    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The clone (or other directory) `name` under [`Clones::root`].
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.root().join(name)
    }

    #[track_caller]
    pub(crate) fn git(&self, dir: &Path, args: &[&str]) -> String {
        git_in(dir, self.home.path(), args)
    }

    /// Runs `git <args>` in `dir` with extra environment variables; asserts it succeeds.
    #[track_caller]
    pub(crate) fn git_with_env(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
        git_in_env(dir, self.home.path(), args, env)
    }

    /// Runs `squad -C <dir> <args>` with `stdin` on its standard input.
    pub(crate) fn squad(&self, dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
        run_with_stdin(&mut squad_in(dir, self.home.path(), args), stdin)
    }

    /// Isolates `c` as every command of these clones is.
    pub(crate) fn env(&self, c: &mut Command) {
        isolate(c, self.home.path());
    }

    /// [`Clones::squad`] with extra environment variables, set after the isolation.
    pub(crate) fn squad_env(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = squad_in(dir, self.home.path(), args);
        c.envs(env.iter().copied());
        run_with_stdin(&mut c, None)
    }

    /// [`Clones::squad`], asserting exit 0; returns stdout.
    #[track_caller]
    pub(crate) fn ok(&self, dir: &Path, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.squad(dir, args, stdin);
        assert_eq!(
            out.status.code(),
            Some(0),
            "squad {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// [`Clones::ok`] without input, its stdout parsed as JSON.
    #[track_caller]
    pub(crate) fn json(&self, dir: &Path, args: &[&str]) -> serde_json::Value {
        serde_json::from_str(&self.ok(dir, args, None)).unwrap()
    }
}

/// Points `c` at an isolated git configuration (no system configuration, `home` as `HOME`, a
/// fixed identity) and clears the variables that would reach another repository, GitHub or a
/// webhook.
pub(crate) fn isolate(c: &mut Command, home: &Path) {
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", home)
        .env("GIT_AUTHOR_NAME", "Squad Test")
        .env("GIT_AUTHOR_EMAIL", "squad@test.invalid")
        .env("GIT_COMMITTER_NAME", "Squad Test")
        .env("GIT_COMMITTER_EMAIL", "squad@test.invalid")
        .env_remove("GIT_DIR")
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("SQUAD_WEBHOOK_URL");
}

/// Runs `git <args>` in `dir`, asserts it succeeds and returns its output.
#[track_caller]
fn git_in(dir: &Path, home: &Path, args: &[&str]) -> String {
    git_in_env(dir, home, args, &[])
}

/// [`git_in`] with extra environment variables, set after the isolation.
#[track_caller]
fn git_in_env(dir: &Path, home: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut c = Command::new("git");
    c.current_dir(dir).args(args);
    isolate(&mut c, home);
    c.envs(env.iter().copied());
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `squad -C <dir> <args>`, isolated, not yet run.
fn squad_in(dir: &Path, home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_squad"));
    c.arg("-C").arg(dir).args(args);
    isolate(&mut c, home);
    c
}

/// Runs `c` with `stdin` written to its standard input (closed at once when `None`) and
/// collects its output.
pub(crate) fn run_with_stdin(c: &mut Command, stdin: Option<&str>) -> Output {
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut pipe = child.stdin.take().unwrap();
        if let Some(s) = stdin {
            // A command that fails before reading its input (bad usage) closes the pipe: that
            // is its answer, not the test's failure.
            match pipe.write_all(s.as_bytes()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.unwrap(),
            }
        }
    }
    child.wait_with_output().unwrap()
}

/// Runs `c` with a reader of its standard output that takes at most `first` bytes (as
/// `head -c1` does) and goes away: the bytes it read, the exit code and stderr.
pub(crate) fn run_until_reader_leaves(
    c: &mut Command,
    first: usize,
) -> (usize, Option<i32>, String) {
    use std::io::Read;
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = vec![0u8; first];
    let read = if first == 0 {
        0
    } else {
        stdout.read(&mut buf).unwrap_or(0)
    };
    drop(stdout);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (read, child.wait().unwrap().code(), err)
}
