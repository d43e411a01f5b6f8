//! Notes across clones and history rewrites: three clones promoting and syncing at once,
//! `git commit --amend`, `git rebase -i` and a squash merge followed by `squad notes carry`.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::git_repo::Clones;

fn ids(v: &Value, field: &str) -> Vec<String> {
    v[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect()
}

fn decision(w: &Clones, dir: &Path, text: &str, commit: &str) -> String {
    let fields = format!(r#"{{"decision":"{text}"}}"#);
    w.ok(
        dir,
        &[
            "notes",
            "write",
            "--agent",
            "data",
            "--type",
            "decision",
            "--fields",
            &fields,
            "--promote",
            "--commit",
            commit,
        ],
        None,
    )
    .trim()
    .to_owned()
}

/// Three clones promote while the others promote and sync; after the final syncs each flagged
/// entry is in `decisions.md` exactly once, byte-identical on every clone and on the remote, and
/// plain `git fetch` / `git pull` still work.
#[test]
fn three_clones_promote_and_sync_to_one_copy_of_each_entry() {
    let w = Clones::new("seed");
    w.git(w.root(), &["clone", "-q", "remote.git", "c"]);
    w.ok(&w.path("c"), &["notes", "setup"], None);
    let clones = ["a", "b", "c"];
    let mut flagged = BTreeSet::new();
    // One entry every clone knows before anyone promotes (so all three may promote it), and
    // one of each clone's own.
    flagged.insert(decision(&w, &w.path("a"), "shared", "HEAD"));
    w.ok(&w.path("a"), &["notes", "sync"], None);
    for clone in clones {
        w.ok(&w.path(clone), &["notes", "sync"], None);
        flagged.insert(decision(&w, &w.path(clone), &format!("by {clone}"), "HEAD"));
    }
    std::thread::scope(|s| {
        for clone in clones {
            let w = &w;
            s.spawn(move || {
                let dir = w.path(clone);
                for _ in 0..2 {
                    w.ok(&dir, &["notes", "promote"], None);
                    w.ok(&dir, &["notes", "sync"], None);
                }
            });
        }
    });
    for clone in ["a", "b", "c", "a", "b"] {
        w.ok(&w.path(clone), &["notes", "sync"], None);
    }
    let remote = w.git(&w.path("remote.git"), &["show", "squad-state:decisions.md"]);
    for id in &flagged {
        let n = remote.matches(&format!("- **Entry:** {id}\n")).count();
        assert_eq!(n, 1, "entry {id} appears {n} times:\n{remote}");
    }
    let ledger = w.git(
        &w.path("remote.git"),
        &["show", "squad-state:ledger/promoted"],
    );
    assert_eq!(ledger.lines().count(), flagged.len(), "{ledger}");
    for clone in clones {
        let dir = w.path(clone);
        assert_eq!(
            w.git(&dir, &["show", "squad-state:decisions.md"]),
            remote,
            "{clone}"
        );
        // A clone that is behind promotes nothing again.
        let again = w.json(&dir, &["--json", "notes", "promote"]);
        assert_eq!(ids(&again, "promoted"), Vec::<String>::new(), "{clone}");
        w.git(&dir, &["fetch"]);
        w.git(&dir, &["pull", "--no-rebase"]);
        w.git(&dir, &["fsck", "--no-progress"]);
    }
}

/// `git commit --amend`, `git rebase -i` (reword, squash) and a squash merge on the remote's
/// main followed by `carry`: every entry is visible on the new commit and promoted once.
#[test]
fn notes_follow_amend_rebase_and_a_carried_squash_merge() {
    let w = Clones::new("seed");
    let a = w.path("a");
    let git = |args: &[&str]| w.git(&a, args);
    let change = |name: &str| {
        std::fs::write(a.join(name), name).unwrap();
        w.git(&a, &["add", name]);
        w.git(&a, &["commit", "-q", "-m", name]);
    };
    git(&["checkout", "-q", "-b", "feature"]);
    change("f1");
    let e1 = decision(&w, &a, "one", "HEAD");
    change("f2");
    let e2 = decision(&w, &a, "two", "HEAD");
    let shown_ids = |rev: &str| -> BTreeSet<String> {
        let v = w.json(&a, &["--json", "notes", "show", "--agent", "data", rev]);
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect()
    };
    // Amend: the note moves to the new commit (notes setup configured git's rewrite support).
    git(&["commit", "-q", "--amend", "-m", "f2 amended"]);
    assert_eq!(shown_ids("HEAD"), BTreeSet::from([e2.clone()]));
    // rebase -i: reword f1, squash f2 into it; both entries end on the one new commit.
    w.git_with_env(
        &a,
        &["rebase", "-q", "-i", "main"],
        &[
            (
                "GIT_SEQUENCE_EDITOR",
                "sed -i -e '1s/^pick/reword/' -e '2s/^pick/squash/'",
            ),
            ("GIT_EDITOR", "true"),
        ],
    );
    assert_eq!(git(&["rev-list", "--count", "main..HEAD"]).trim(), "1");
    assert_eq!(shown_ids("HEAD"), BTreeSet::from([e1.clone(), e2.clone()]));
    // Two more commits on the branch, then "Squash and merge" on the remote (done by clone b).
    change("f3");
    let e3 = decision(&w, &a, "three", "HEAD");
    git(&["push", "-q", "origin", "feature"]);
    w.ok(&a, &["notes", "sync"], None);
    let b = w.path("b");
    w.git(&b, &["fetch", "-q"]);
    w.git(&b, &["merge", "-q", "--squash", "origin/feature"]);
    w.git(&b, &["commit", "-q", "-m", "Feature (#1)"]);
    w.git(&b, &["push", "-q", "origin", "main"]);
    git(&["fetch", "-q"]);
    let landed = git(&["rev-parse", "origin/main"]).trim().to_owned();
    let base = git(&["rev-parse", "main"]).trim().to_owned();
    // The PR's commits are not on main: nothing to promote yet.
    git(&["config", "squad.defaultBranch", "origin/main"]);
    let before = w.json(&a, &["--json", "notes", "promote"]);
    assert_eq!(ids(&before, "promoted"), Vec::<String>::new());
    let range = format!("{base}..feature");
    let carried = w.json(&a, &["--json", "notes", "carry", &range, "--to", &landed]);
    let mut got = ids(&carried, "carried");
    got.sort();
    let mut want = vec![e1.clone(), e2.clone(), e3.clone()];
    want.sort();
    assert_eq!(got, want);
    // Idempotent.
    let again = w.json(&a, &["--json", "notes", "carry", &range, "--to", &landed]);
    assert_eq!(ids(&again, "carried"), Vec::<String>::new());
    assert_eq!(again["skipped"], 3);
    // Each copy says where it came from, with the full id of the old commit.
    let copies = w.json(&a, &["--json", "notes", "show", "--agent", "data", &landed]);
    for copy in copies.as_array().unwrap() {
        let from = copy["carried_from"].as_str().unwrap();
        assert_eq!(from.len(), 40);
        assert_eq!(git(&["merge-base", "--is-ancestor", from, "feature"]), "");
    }
    let promoted = w.json(&a, &["--json", "notes", "promote"]);
    let mut got = ids(&promoted, "promoted");
    got.sort();
    assert_eq!(got, want);
    let again = w.json(&a, &["--json", "notes", "promote"]);
    assert_eq!(ids(&again, "promoted"), Vec::<String>::new());
    // Bad ranges are usage errors.
    for bad in ["feature", "..feature", "main...feature"] {
        let out = w.squad(&a, &["notes", "carry", bad, "--to", &landed], None);
        assert_eq!(out.status.code(), Some(2), "{bad}");
    }
}
