//! A real git repository in a temp dir, driven by the real git CLI.

use std::path::Path;
use std::process::{Command, Output};

use squad_model::{AgentName, NoteEntry, NoteType};
use squad_notes::{GixNotes, Oid};
use tempfile::TempDir;

pub(crate) struct Repo {
    pub(crate) dir: TempDir,
    home: TempDir,
}

impl Repo {
    pub(crate) fn new() -> Self {
        let repo = Repo {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        };
        repo.git_ok(&["init", "-q", "-b", "main"]);
        repo.git_ok(&["config", "user.name", "Squad Test"]);
        repo.git_ok(&["config", "user.email", "squad@test.invalid"]);
        repo.git_ok(&["config", "gc.auto", "0"]);
        repo
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("git");
        c.current_dir(self.dir.path())
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.home.path())
            .env("LC_ALL", "C")
            .env("GIT_AUTHOR_NAME", "Squad Test")
            .env("GIT_AUTHOR_EMAIL", "squad@test.invalid")
            .env("GIT_COMMITTER_NAME", "Squad Test")
            .env("GIT_COMMITTER_EMAIL", "squad@test.invalid")
            .env_remove("GIT_NOTES_REF")
            .env_remove("GIT_DIR");
        c
    }

    pub(crate) fn git(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    #[track_caller]
    pub(crate) fn git_ok(&self, args: &[&str]) -> String {
        let out = self.git(args);
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs git with `stdin` as input.
    #[track_caller]
    pub(crate) fn git_stdin(&self, args: &[&str], stdin: &[u8]) -> String {
        String::from_utf8(self.git_stdin_bytes(args, stdin)).unwrap()
    }

    /// Runs git with `stdin` as input; its output as bytes.
    #[track_caller]
    pub(crate) fn git_stdin_bytes(&self, args: &[&str], stdin: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut child = self
            .cmd(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        let stdin = stdin.to_vec();
        // Written from a thread: git may fill its output pipe before it has read all its input.
        let writer = std::thread::spawn(move || input.write_all(&stdin));
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    pub(crate) fn commit(&self, msg: &str) -> Oid {
        self.git_ok(&["commit", "-q", "--allow-empty", "-m", msg]);
        self.rev("HEAD").unwrap()
    }

    pub(crate) fn rev(&self, rev: &str) -> Option<Oid> {
        let out = self.git(&["rev-parse", "-q", "--verify", rev]);
        out.status.success().then(|| {
            String::from_utf8(out.stdout)
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        })
    }

    pub(crate) fn backend(&self) -> GixNotes {
        GixNotes::open(self.path()).unwrap()
    }

    #[track_caller]
    pub(crate) fn fsck(&self) {
        let out = self.git(&["fsck", "--strict", "--no-progress", "--no-dangling"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let problems = stderr
            .lines()
            .filter(|l| !l.starts_with("notice: HEAD points to an unborn branch"));
        assert!(
            out.status.success() && problems.count() == 0,
            "git fsck: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

pub(crate) fn agent(name: &str) -> AgentName {
    AgentName::new(name).unwrap()
}

pub(crate) fn entry(agent_name: &str, content: &str) -> NoteEntry {
    let mut e = NoteEntry::new(agent(agent_name), NoteType::Progress);
    e.content = Some(content.to_owned());
    e
}

/// The error's message followed by its chain of sources, for assertion messages.
pub(crate) fn with_sources(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
