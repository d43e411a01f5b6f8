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

/// The release `squad` binary: `SQUAD_BIN`, else `target/release/squad` of this workspace;
/// `None` when it is not built.
pub fn squad_bin() -> Option<std::path::PathBuf> {
    std::env::var_os("SQUAD_BIN")
        .map(std::path::PathBuf::from)
        .or_else(|| Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/squad")))
        .filter(|p| p.is_file())
}

/// A fixture repository cached under `target/squad-bench-fixtures/`, and the `HOME` its git
/// commands run with.
#[derive(Debug, Clone)]
pub struct FixtureRepo {
    /// The repository's work tree.
    pub dir: std::path::PathBuf,
    /// An empty home directory shared by the fixtures, so no user configuration applies.
    pub home: std::path::PathBuf,
}

impl FixtureRepo {
    /// The fixture `name`, built by `build(dir, home)` unless a build of the same `version` is
    /// cached already (the version is recorded in the repository once `build` returns).
    pub fn cached(name: &str, version: &str, build: impl FnOnce(&Path, &Path)) -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/squad-bench-fixtures");
        let dir = root.join(name);
        let home = root.join("home");
        let marker = dir.join("fixture-version");
        let fresh = std::fs::read_to_string(&marker).ok().as_deref() == Some(version);
        if !fresh {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("create the fixture directory");
            std::fs::create_dir_all(&home).expect("create the fixtures' home");
            build(&dir, &home);
            std::fs::write(&marker, version).expect("record the fixture version");
        }
        Self { dir, home }
    }

    /// A git command in the fixture (see [`git`]), with the fixtures' `HOME`.
    pub fn git(&self) -> Command {
        git_with_home(&self.dir, &self.home)
    }

    /// Runs git with `args` in the fixture; its standard output. Panics when git fails.
    pub fn run(&self, args: &[&str]) -> String {
        let mut c = self.git();
        c.args(args);
        run(c)
    }
}

/// [`git`] in `dir` with `home` as `HOME`.
pub fn git_with_home(dir: &Path, home: &Path) -> Command {
    let mut c = git(dir);
    c.env("HOME", home);
    c
}

/// Runs `cmd` and returns its standard output. Panics, with git's error output, when it fails:
/// a broken fixture should stop the bench.
pub fn run(mut cmd: Command) -> String {
    let out = cmd.output().expect("run git");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("git output is UTF-8")
}

/// Runs `cmd` with `input` on its standard input. Panics when it fails.
pub fn run_stdin(mut cmd: Command, input: &[u8]) {
    use std::io::Write;
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("run git");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input)
        .expect("write git's input");
    assert!(child.wait().expect("wait for git").success(), "{cmd:?}");
}

/// The decision entry number `i` of `agent` that every notes fixture holds (about 230 bytes as
/// one compact JSON line; flagged for promotion).
pub fn decision_entry(agent: &squad_model::AgentName, i: usize) -> squad_model::NoteEntry {
    let mut e = squad_model::NoteEntry::new(agent.clone(), squad_model::NoteType::Decision);
    e.decision = Some(format!("Use JWT RS256 for auth middleware, step {i}"));
    e.reasoning = Some("Existing pattern in codebase: auth.go:47-89.".into());
    e.alternatives_considered = Some(vec!["HS256".into(), "session tokens".into()]);
    e.confidence = Some(squad_model::Confidence::High);
    e.promote_to_permanent = Some(true);
    e
}

/// Fills the empty repository `dir`: `git init`, a bench identity and no automatic gc (plus
/// `config`), then, with `git fast-import`, a linear history of `n` commits on `main` and one
/// note per commit in `refs/notes/squad/data` ([`decision_entry`] of `data`), all in one notes
/// commit.
pub fn build_notes_history(dir: &Path, home: &Path, n: usize, config: &[(&str, &str)]) {
    build_notes_history_in(dir, home, n, n, config);
}

/// [`build_notes_history`], with the notes added `per_commit` at a time: `n / per_commit`
/// notes commits, as a squad writing notes over time leaves them.
pub fn build_notes_history_in(
    dir: &Path,
    home: &Path,
    n: usize,
    per_commit: usize,
    config: &[(&str, &str)],
) {
    let run_git = |args: &[&str]| {
        let mut c = git_with_home(dir, home);
        c.args(args);
        run(c)
    };
    run_git(&["init", "-q", "-b", "main"]);
    let base = [
        ("user.name", "Bench"),
        ("user.email", "bench@test.invalid"),
        ("gc.auto", "0"),
        ("maintenance.auto", "false"),
        ("core.hooksPath", "/dev/null"),
    ];
    for (k, v) in base.iter().chain(config) {
        run_git(&["config", k, v]);
    }
    let data = squad_model::AgentName::new("data").expect("a valid agent name");
    let mut s = String::with_capacity(n * 400);
    for i in 1..=n {
        s.push_str(&format!(
            "commit refs/heads/main\nmark :{i}\ncommitter Bench <bench@test.invalid> {} +0000\ndata 0\n\n",
            1_700_000_000 + i
        ));
    }
    for i in 1..=n {
        let line = decision_entry(&data, i).to_line();
        s.push_str(&format!(
            "blob\nmark :{}\ndata {}\n{line}\n",
            n + i,
            line.len()
        ));
    }
    for (c, first) in (1..=n).step_by(per_commit.max(1)).enumerate() {
        s.push_str(&format!(
            "commit refs/notes/squad/data\ncommitter Bench <bench@test.invalid> {} +0000\ndata 8\nfixture\n",
            1_700_000_000 + c
        ));
        for i in first..(first + per_commit.max(1)).min(n + 1) {
            s.push_str(&format!("N :{} :{i}\n", n + i));
        }
        s.push('\n');
    }
    let mut c = git_with_home(dir, home);
    c.args(["fast-import", "--quiet"]);
    run_stdin(c, s.as_bytes());
}
