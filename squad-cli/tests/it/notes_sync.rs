//! `squad notes sync` between clones of a bare repository.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::git_repo::Clones;

/// A bare remote with one commit on `main` and clones `a` and `b` (see [`Clones`]).
struct World(Clones);

impl std::ops::Deref for World {
    type Target = Clones;
    fn deref(&self) -> &Clones {
        &self.0
    }
}

impl World {
    fn new() -> Self {
        World(Clones::new("first"))
    }

    fn squad(&self, dir: &Path, args: &[&str]) -> Output {
        self.0.squad(dir, args, None)
    }

    #[track_caller]
    fn sync_json(&self, clone: &str) -> Value {
        let out = self.squad(&self.path(clone), &["--json", "notes", "sync"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    #[track_caller]
    fn write(&self, clone: &str, content: &str) {
        let out = self.squad(
            &self.path(clone),
            &[
                "notes",
                "write",
                "--agent",
                "data",
                "--type",
                "progress",
                "--content",
                content,
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }

    #[track_caller]
    fn contents(&self, clone: &str) -> Vec<String> {
        let out = self.squad(
            &self.path(clone),
            &["--json", "notes", "show", "--agent", "data"],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut c: Vec<String> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["content"].as_str().unwrap().to_owned())
            .collect();
        c.sort();
        c
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn counts(v: &Value) -> (u64, u64, u64) {
    (
        v["fetched"].as_u64().unwrap(),
        v["merged"].as_u64().unwrap(),
        v["pushed"].as_u64().unwrap(),
    )
}

#[test]
fn sync_merges_both_clones_and_reports_counts() {
    let w = World::new();
    w.write("a", "from a");
    w.write("b", "from b");
    assert_eq!(counts(&w.sync_json("a")), (0, 0, 1));
    let b = w.sync_json("b");
    assert_eq!(counts(&b), (1, 1, 1));
    assert_eq!(b["remote"], "origin");
    assert_eq!(b["rounds"], 1);
    assert_eq!(counts(&w.sync_json("a")), (1, 0, 0));
    for clone in ["a", "b"] {
        assert_eq!(w.contents(clone), ["from a", "from b"], "clone {clone}");
        // Plain git keeps working.
        w.git(&w.path(clone), &["fetch"]);
        w.git(&w.path(clone), &["pull", "--no-rebase"]);
    }
    // Nothing new: nothing to do, human output on stdout.
    let out = w.squad(&w.path("a"), &["notes", "sync", "--remote", "origin"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("origin: fetched 0, merged 0, pushed 0"),
        "{}",
        text(&out.stdout)
    );
}

/// Bad remotes (unknown, option-like, empty, with `..`) exit 2 with a message naming the remote,
/// and change no ref.
#[test]
fn bad_remotes_exit_2_and_change_nothing() {
    let w = World::new();
    w.write("a", "local only");
    let a = w.path("a");
    let before = w.git(&a, &["for-each-ref"]);
    for remote in ["nope", "--upload-pack=touch pwned", "", "a..b"] {
        let out = w.squad(&a, &["notes", "sync", &format!("--remote={remote}")]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "remote {remote:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("remote"),
            "{}",
            text(&out.stderr)
        );
    }
    assert_eq!(w.git(&a, &["for-each-ref"]), before);
    assert!(!a.join("pwned").exists());
    // Outside a repository: exit 2 as well.
    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_squad"))
        .arg("-C")
        .arg(empty.path())
        .args(["notes", "sync"])
        .env("GIT_CEILING_DIRECTORIES", empty.path().parent().unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn sync_help_has_an_example() {
    let out = Command::new(env!("CARGO_BIN_EXE_squad"))
        .args(["notes", "sync", "--help"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("Example:\n  squad notes sync"));
}
