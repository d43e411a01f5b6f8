//! Benchmarks of the squad crates; run them with `cargo bench -p squad-bench`.
//!
//! Each bench file measures our code and its baseline in the same run, so that the ratio can be
//! reported.

use std::path::Path;
use std::process::Command;

/// A `git` command run in `dir`, isolated from the machine: no system or global configuration,
/// a fixed identity, the C locale, and no inherited `GIT_DIR`. Every git-CLI baseline uses it, so
/// that ours and the baseline see the same repository the same way.
pub fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("LC_ALL", "C")
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@test.invalid")
        .env("GIT_COMMITTER_NAME", "Bench")
        .env("GIT_COMMITTER_EMAIL", "bench@test.invalid")
        .env_remove("GIT_DIR");
    c
}
