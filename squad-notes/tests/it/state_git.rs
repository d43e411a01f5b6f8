//! Helpers for tests that need real git repositories (used by the state and transport tests).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A `git` command isolated from the machine's configuration, with a fixed identity.
pub(crate) fn git_cmd(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.invalid")
        .env("GIT_COMMITTER_NAME", "Test Committer")
        .env("GIT_COMMITTER_EMAIL", "committer@example.invalid")
        .env("LC_ALL", "C");
    cmd
}

/// Runs git, returns the whole output whatever the status.
pub(crate) fn git_output(dir: &Path, args: &[&str]) -> Output {
    git_cmd(dir).args(args).output().unwrap()
}

/// Runs git, asserts success, returns stdout.
#[track_caller]
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} failed in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A new non-bare repository with one commit on `main`, a local identity and gc disabled.
pub(crate) fn repo_with_commit(dir: &Path) -> PathBuf {
    let path = dir.to_path_buf();
    std::fs::create_dir_all(&path).unwrap();
    git(&path, &["init", "-q", "-b", "main"]);
    configure(&path);
    std::fs::write(path.join("README.md"), "hello\n").unwrap();
    git(&path, &["add", "README.md"]);
    git(&path, &["commit", "-q", "-m", "first"]);
    path
}

/// Sets a local identity and turns automatic maintenance off.
pub(crate) fn configure(path: &Path) {
    git(path, &["config", "user.name", "Repo User"]);
    git(path, &["config", "user.email", "repo-user@example.invalid"]);
    git(path, &["config", "gc.auto", "0"]);
    git(path, &["config", "maintenance.auto", "false"]);
}
