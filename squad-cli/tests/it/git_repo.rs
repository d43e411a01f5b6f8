//! A real git repository in a temporary directory, with an isolated git configuration, and the
//! `squad` binary run inside it: shared by the CLI tests of the notes commands.

use std::path::Path;
use std::process::{Command, Output};

use tempfile::TempDir;

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
        c.env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.home.path())
            .env("GIT_AUTHOR_NAME", "Squad Test")
            .env("GIT_AUTHOR_EMAIL", "squad@test.invalid")
            .env("GIT_COMMITTER_NAME", "Squad Test")
            .env("GIT_COMMITTER_EMAIL", "squad@test.invalid")
            .env_remove("GIT_DIR");
    }

    #[track_caller]
    pub(crate) fn git(&self, args: &[&str]) -> String {
        let mut c = Command::new("git");
        c.current_dir(self.path()).args(args);
        self.env(&mut c);
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
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
        let mut c = Command::new(env!("CARGO_BIN_EXE_squad"));
        c.arg("-C").arg(self.path()).args(args);
        self.env(&mut c);
        c
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
