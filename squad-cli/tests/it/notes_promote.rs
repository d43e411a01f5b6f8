//! `squad notes promote` and `squad notes archive` against real git repositories.

use std::collections::HashSet;
use std::process::Command;

use serde_json::Value;

use crate::git_repo::Repo;

/// What the promotion tests add to the shared repository fixture.
trait PromoteRepo {
    fn json(&self, args: &[&str]) -> Value;
    fn decision(&self, agent: &str, text: &str, flag: &str) -> String;
    fn state(&self, key: &str) -> String;
}

impl PromoteRepo for Repo {
    #[track_caller]
    fn json(&self, args: &[&str]) -> Value {
        let out = self.squad(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Writes a decision on HEAD with `squad notes write` and returns its id.
    fn decision(&self, agent: &str, text: &str, flag: &str) -> String {
        let fields = format!(r#"{{"decision":"{text}","reasoning":"r","confidence":"high"}}"#);
        let mut args = vec![
            "notes", "write", "--agent", agent, "--type", "decision", "--fields", &fields,
        ];
        if !flag.is_empty() {
            args.push(flag);
        }
        let out = self.squad(&args);
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    fn state(&self, key: &str) -> String {
        self.git(&["show", &format!("squad-state:{key}")])
    }
}

fn ids(v: &Value, field: &str) -> Vec<String> {
    v[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn promote_once_dry_run_and_skips() {
    let repo = Repo::new();
    repo.git(&["config", "squad.defaultBranch", "main"]);
    let flagged = repo.decision("data", "Use JWT RS256", "--promote");
    repo.decision("data", "Unflagged", "");
    let head = repo.git(&["rev-parse", "HEAD"]).trim().to_owned();
    repo.git(&[
        "notes",
        "--ref=squad/data",
        "append",
        "-m",
        "{broken",
        &head,
    ]);

    // Dry run: reported, nothing written.
    let before = repo.refs();
    let dry = repo.json(&["notes", "promote", "--dry-run", "--json"]);
    assert_eq!(ids(&dry, "promoted"), [flagged.as_str()]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(repo.refs(), before);

    let out = repo.squad(&["notes", "promote", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let first: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ids(&first, "promoted"), [flagged.as_str()]);
    assert_eq!(first["skipped"], 2);
    assert_eq!(first["unparseable"][0]["commit"], head.as_str());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: refs/notes/squad/data"),
        "{stderr}"
    );
    let md = repo.state("decisions.md");
    assert!(
        md.contains("### Use JWT RS256") && md.contains("- **Confidence:** high"),
        "{md}"
    );

    let second = repo.json(&["notes", "promote", "--json"]);
    assert!(ids(&second, "promoted").is_empty());
    assert_eq!(repo.state("decisions.md"), md);

    // Human output.
    let out = repo.squad(&["notes", "promote"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("promoted 0"));
}

#[test]
fn two_concurrent_processes_promote_each_decision_once() {
    let repo = Repo::new();
    repo.git(&["config", "squad.defaultBranch", "main"]);
    let mut want = HashSet::new();
    for i in 0..6 {
        repo.git(&["commit", "-q", "--allow-empty", "-m", &format!("c{i}")]);
        want.insert(repo.decision("data", &format!("D{i}"), "--promote"));
    }
    let children: Vec<_> = (0..2)
        .map(|_| {
            repo.command(&["notes", "promote", "--json"])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut all = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        all.extend(ids(&v, "promoted"));
    }
    let unique: HashSet<String> = all.iter().cloned().collect();
    assert_eq!(all.len(), unique.len(), "promoted twice: {all:?}");
    assert_eq!(unique, want);
    let md = repo.state("decisions.md");
    for id in &want {
        assert_eq!(md.matches(id.as_str()).count(), 1);
    }
}

#[test]
fn squash_merge_and_closed_branch() {
    let repo = Repo::new();
    repo.git(&["config", "squad.defaultBranch", "main"]);
    repo.git(&["checkout", "-q", "-b", "pr"]);
    repo.git(&["commit", "-q", "--allow-empty", "-m", "pr work"]);
    let d = repo.decision("data", "From the PR", "--promote");
    repo.git(&["checkout", "-q", "main"]);
    repo.git(&["merge", "-q", "--squash", "pr"]);
    repo.git(&["commit", "-q", "--allow-empty", "-m", "squash"]);
    assert!(ids(&repo.json(&["notes", "promote", "--json"]), "promoted").is_empty());
    let v = repo.json(&[
        "notes",
        "promote",
        "--branch",
        "main",
        "--merged-from",
        "pr",
        "--json",
    ]);
    assert_eq!(ids(&v, "promoted"), [d]);

    repo.git(&["checkout", "-q", "-b", "spike"]);
    repo.git(&["commit", "-q", "--allow-empty", "-m", "spike"]);
    let out = repo.squad(&[
        "notes",
        "write",
        "--agent",
        "data",
        "--namespace",
        "research",
        "--type",
        "research",
        "--fields",
        r#"{"topic":"Device flow"}"#,
        "--archive",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let r = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    repo.git(&["checkout", "-q", "main"]);
    let v = repo.json(&["notes", "archive", "--closed", "spike", "--json"]);
    assert_eq!(ids(&v, "archived"), [r.as_str()]);
    let file = v["files"][0].as_str().unwrap().to_owned();
    assert!(repo.state(&file).contains(&r));
    let v = repo.json(&["notes", "archive", "--closed", "spike", "--json"]);
    assert!(ids(&v, "archived").is_empty());
}

#[test]
fn bad_inputs_exit_2_and_write_nothing() {
    let repo = Repo::new();
    repo.decision("data", "X", "--promote");
    let before = repo.refs();
    // No default branch: the message says how to set one.
    let out = repo.squad(&["notes", "promote"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("git config squad.defaultBranch"),
        "{stderr}"
    );
    // An unknown branch, an unknown --merged-from, an unknown --closed, a missing --closed.
    for args in [
        &["notes", "promote", "--branch", "nope"][..],
        &[
            "notes",
            "promote",
            "--branch",
            "main",
            "--merged-from",
            "nope",
        ],
        &["notes", "archive", "--branch", "main", "--closed", "nope"],
        &["notes", "archive", "--branch", "main"],
    ] {
        let out = repo.squad(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    // Not a repository.
    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_squad"))
        .arg("-C")
        .arg(empty.path())
        .args(["notes", "promote", "--branch", "main"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(repo.refs(), before);
}
