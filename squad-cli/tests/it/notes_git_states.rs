//! The states of git's own notes tests (t3301 basic, t3303 fanout and "same notes in two
//! fanouts", t3304 notes mixed with non-notes, t3308 merges), rebuilt with the real git CLI in
//! `refs/notes/squad/data`, then read, written and synced through `squad`:
//!
//! - for every annotated object, `squad notes show` and `list` agree with `git notes show` /
//!   `list` (same objects, same bytes, the same entries);
//! - after our write, `git notes show` of every other object is byte-identical to before;
//! - after a sync between two clones, every line git wrote is stored byte for byte.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;
use squad_notes::{GixNotes, NotesBackend, NotesRef, Oid};

use crate::git_repo::{Clones, Repo};

const NS: &str = "--ref=squad/data";

/// An entry line as git would store one written by hand: its own key order, an offset spelled
/// `+00:00`, milliseconds and a `null` field.
fn git_entry(n: u32, ts_ms: u32, extra: &str) -> String {
    format!(
        r#"{{"id":"01J00000000000000000000{n:03}","timestamp":"2026-03-23T14:00:00.{ts_ms:03}+00:00","agent":"data","type":"research","findings":null{extra}}}"#
    )
}

/// `git notes list` as (annotated object -> note blob).
fn git_list(dir: &Path, git: &dyn Fn(&Path, &[&str]) -> String) -> BTreeMap<String, String> {
    git(dir, &["notes", NS, "list"])
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(blob, obj)| (obj.to_owned(), blob.to_owned()))
        .collect()
}

/// `git notes show` of every annotated object.
fn git_show_all(dir: &Path, git: &dyn Fn(&Path, &[&str]) -> String) -> BTreeMap<String, String> {
    git_list(dir, git)
        .keys()
        .map(|o| (o.clone(), git(dir, &["notes", NS, "show", o])))
        .collect()
}

/// Builds git's notes-test states in `repo`; returns the objects by name.
fn build_states(repo: &Repo) -> BTreeMap<&'static str, String> {
    let git = |args: &[&str]| repo.git(args);
    let rev = |r: &str| git(&["rev-parse", r]).trim().to_owned();
    std::fs::write(repo.path().join("file.txt"), "hello\n").unwrap();
    git(&["add", "file.txt"]);
    git(&["commit", "-q", "-m", "c1"]);
    git(&["tag", "-a", "-m", "release", "v1"]);
    git(&["commit", "-q", "--allow-empty", "-m", "c2"]);
    git(&["commit", "-q", "--allow-empty", "-m", "c3"]);
    git(&["commit", "-q", "--allow-empty", "-m", "c4"]);
    let mut o = BTreeMap::new();
    o.insert("c1", rev("HEAD~3"));
    o.insert("c2", rev("HEAD~2"));
    o.insert("c3", rev("HEAD~1"));
    o.insert("c4", rev("HEAD"));
    o.insert("tag", rev("v1"));
    o.insert("tree", rev("HEAD^{tree}"));
    o.insert("blob", rev("HEAD:file.txt"));
    o.insert(
        "missing",
        "1111111111111111111111111111111111111111".to_owned(),
    );
    // t3301: add, append (blank-line separator), append --no-separator, a hand-written remark,
    // notes on a tag, a tree, a blob and an object that is not in the repository.
    git(&["notes", NS, "add", "-m", &git_entry(1, 120, ""), &o["c1"]]);
    git(&[
        "notes",
        NS,
        "append",
        "-m",
        &git_entry(2, 5, r#","x":[1,2]"#),
        &o["c1"],
    ]);
    git(&[
        "notes",
        NS,
        "append",
        "--no-separator",
        "-m",
        &git_entry(3, 0, ""),
        &o["c1"],
    ]);
    git(&["notes", NS, "append", "-m", "hand-written remark", &o["c1"]]);
    git(&["notes", NS, "add", "-m", &git_entry(4, 1, ""), &o["tag"]]);
    git(&["notes", NS, "add", "-m", &git_entry(5, 2, ""), &o["tree"]]);
    git(&["notes", NS, "add", "-m", &git_entry(6, 3, ""), &o["blob"]]);
    git(&[
        "notes",
        NS,
        "add",
        "-m",
        &git_entry(7, 4, ""),
        &o["missing"],
    ]);
    // t3308: a union and a cat_sort_uniq merge of two diverged histories of one note.
    git(&["notes", NS, "add", "-m", &git_entry(8, 8, ""), &o["c4"]]);
    git(&[
        "update-ref",
        "refs/notes/squad/side",
        "refs/notes/squad/data",
    ]);
    git(&["notes", NS, "append", "-m", &git_entry(9, 9, ""), &o["c4"]]);
    git(&[
        "notes",
        "--ref=squad/side",
        "append",
        "-m",
        &git_entry(10, 10, ""),
        &o["c4"],
    ]);
    git(&[
        "notes",
        NS,
        "merge",
        "-q",
        "-s",
        "union",
        "refs/notes/squad/side",
    ]);
    git(&[
        "notes",
        "--ref=squad/side",
        "append",
        "-m",
        &git_entry(11, 11, ""),
        &o["c1"],
    ]);
    git(&[
        "notes",
        NS,
        "merge",
        "-q",
        "-s",
        "cat_sort_uniq",
        "refs/notes/squad/side",
    ]);
    git(&["update-ref", "-d", "refs/notes/squad/side"]);
    // t3303/t3304: 40 notes in a 2/38 fanout plus a non-note entry, then the same object in
    // two fanouts pointing at the same blob (c2), and at two different blobs (c3).
    let tree = git(&["rev-parse", "refs/notes/squad/data^{tree}"]);
    let mut listing = git(&["ls-tree", tree.trim()]);
    let blob = |text: &str| git_stdin_hash(repo, text);
    let mut fan: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for i in 0..40u32 {
        let hex = format!("{:040x}", 0xabc0_0000_u64 + u64::from(i) * 0x1_0000_0001);
        let id = blob(&format!(
            "{}\n",
            git_entry(100 + i % 800, 0, &format!(r#","n":{i}"#))
        ));
        fan.entry(hex[..2].to_owned())
            .or_default()
            .push(format!("100644 blob {id}\t{}", &hex[2..]));
    }
    let same = blob(&format!("{}\n", git_entry(12, 12, "")));
    let c2 = &o["c2"];
    fan.entry(c2[..2].to_owned())
        .or_default()
        .push(format!("100644 blob {same}\t{}", &c2[2..]));
    listing.push_str(&format!("100644 blob {same}\t{c2}\n"));
    let c3 = &o["c3"];
    let first = blob(&format!("{}\n", git_entry(13, 13, "")));
    let second = blob(&format!("{}\n", git_entry(14, 14, "")));
    fan.entry(c3[..2].to_owned())
        .or_default()
        .push(format!("100644 blob {second}\t{}", &c3[2..]));
    listing.push_str(&format!("100644 blob {first}\t{c3}\n"));
    listing.push_str(&format!(
        "100644 blob {}\tREADME-not-a-note\n",
        blob("kept\n")
    ));
    for (dir, entries) in &fan {
        let sub = git_mktree(repo, &(entries.join("\n") + "\n"));
        listing.push_str(&format!("040000 tree {sub}\t{dir}\n"));
    }
    let root = git_mktree(repo, &listing);
    let parent = git(&["rev-parse", "refs/notes/squad/data"]);
    let commit = git(&["commit-tree", &root, "-p", parent.trim(), "-m", "fanout"]);
    git(&["update-ref", "refs/notes/squad/data", commit.trim()]);
    o
}

fn git_stdin_hash(repo: &Repo, text: &str) -> String {
    let mut c = std::process::Command::new("git");
    c.current_dir(repo.path())
        .args(["hash-object", "-w", "--stdin"]);
    repo.env(&mut c);
    let out = crate::git_repo::run_with_stdin(&mut c, Some(text));
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn git_mktree(repo: &Repo, listing: &str) -> String {
    let mut c = std::process::Command::new("git");
    c.current_dir(repo.path()).arg("mktree");
    repo.env(&mut c);
    let out = crate::git_repo::run_with_stdin(&mut c, Some(listing));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The entries of a note as git shows it: every line that is a JSON object with an `id`, the
/// first per id, as JSON values; and the other non-blank lines.
fn entries_of(text: &str) -> (BTreeMap<String, Value>, usize) {
    let mut entries = BTreeMap::new();
    let mut other = 0;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match serde_json::from_str::<Value>(line) {
            Ok(v) if v.get("id").is_some() => {
                entries
                    .entry(v["id"].as_str().unwrap().to_owned())
                    .or_insert(v);
            }
            _ => other += 1,
        }
    }
    (entries, other)
}

#[test]
fn squad_reads_writes_and_syncs_every_state_of_gits_notes_tests() {
    let repo = Repo::new();
    let objects = build_states(&repo);
    let git = |dir: &Path, args: &[&str]| repo.git_at(dir, args);
    let before = git_show_all(repo.path(), &git);
    assert_eq!(
        before.len(),
        48,
        "{:?}",
        before.keys().take(5).collect::<Vec<_>>()
    );
    // Two entries for c2 pointing at the same blob are one note to git.
    assert_eq!(before[&objects["c2"]].lines().count(), 1);

    // `list` agrees with git: the same objects, with their types.
    let out = repo.squad(&["--json", "notes", "list", "--agent", "data"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let ours: BTreeSet<String> = listed
        .iter()
        .map(|v| v["commit"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ours, before.keys().cloned().collect::<BTreeSet<_>>());
    let kind = |name: &str| {
        listed
            .iter()
            .find(|v| v["commit"] == objects[name].as_str())
            .map(|v| v["type"].as_str().unwrap().to_owned())
            .unwrap()
    };
    for (name, want) in [
        ("c1", "commit"),
        ("tag", "tag"),
        ("tree", "tree"),
        ("blob", "blob"),
        ("missing", "missing"),
    ] {
        assert_eq!(kind(name), want, "{name}");
    }

    // `show` agrees with git for every object: the same bytes through the library, the same
    // entries (as written: `+00:00`, `null`, key order) and one warning per other line.
    let backend = GixNotes::open(repo.path()).unwrap();
    let tip = backend
        .tip(&NotesRef::new("refs/notes/squad/data").unwrap())
        .unwrap()
        .unwrap();
    for (object, text) in &before {
        let oid: Oid = object.parse().unwrap();
        let bytes = backend.read(&tip, &oid).unwrap().unwrap();
        assert_eq!(String::from_utf8(bytes).unwrap(), *text, "{object}");
        let out = repo.squad(&["--json", "notes", "show", "--agent", "data", object]);
        assert_eq!(out.status.code(), Some(0), "{object}");
        let shown: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        let (want, other) = entries_of(text);
        let got: BTreeMap<String, Value> = shown
            .into_iter()
            .map(|v| (v["id"].as_str().unwrap().to_owned(), v))
            .collect();
        assert_eq!(got, want, "{object}");
        let warnings = String::from_utf8_lossy(&out.stderr).lines().count();
        assert_eq!(warnings, other, "{object}");
    }
    // `show v1`: the tag's own note, not the commit's.
    let out = repo.squad(&["--json", "notes", "show", "--agent", "data", "v1"]);
    let shown: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown[0]["id"], "01J00000000000000000000004");
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(
        text.contains("\"timestamp\": \"2026-03-23T14:00:00.001+00:00\""),
        "{text}"
    );

    // Our writes change no other object's note as git shows it: one on c3 (two blobs in two
    // fanouts), one on c2 (one blob in two fanouts), one on c1.
    for name in ["c3", "c2", "c1"] {
        let snapshot = git_show_all(repo.path(), &git);
        let out = repo.squad(&[
            "notes",
            "write",
            "--agent",
            "data",
            "--type",
            "progress",
            "--content",
            &format!("on {name}"),
            "--commit",
            &objects[name],
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let after = git_show_all(repo.path(), &git);
        assert_eq!(after.len(), snapshot.len());
        for (object, text) in &snapshot {
            if object == &objects[name] {
                assert!(after[object].starts_with(text.trim_end()), "{name}");
                assert!(after[object].contains(&format!("on {name}")), "{name}");
            } else {
                assert_eq!(&after[object], text, "{name} changed {object}");
            }
        }
    }
    git(repo.path(), &["fsck", "--no-progress"]);

    // A sync between two clones keeps every line git wrote, byte for byte.
    let w = Clones::new("unused");
    let remote = w.path("remote.git");
    git(
        repo.path(),
        &[
            "push",
            "-q",
            remote.to_str().unwrap(),
            "main:main",
            "--force",
        ],
    );
    git(
        repo.path(),
        &[
            "push",
            "-q",
            remote.to_str().unwrap(),
            "refs/notes/squad/data:refs/notes/squad/data",
        ],
    );
    let lines_of = |m: &BTreeMap<String, String>| -> BTreeSet<(String, String)> {
        m.iter()
            .flat_map(|(o, t)| {
                t.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(move |l| (o.clone(), l.to_owned()))
            })
            .collect()
    };
    let (a, b) = (w.path("a"), w.path("b"));
    for clone in [&a, &b] {
        w.git(
            clone,
            &["fetch", "-q", "origin", "+main:refs/remotes/origin/main"],
        );
        w.git(clone, &["reset", "-q", "--hard", "origin/main"]);
        w.git(
            clone,
            &[
                "fetch",
                "-q",
                "origin",
                "refs/notes/squad/data:refs/notes/squad/data",
            ],
        );
    }
    // Both clones diverge: b with git (its own spelling), a with squad.
    let by_git = git_entry(900, 900, r#","note":"b""#);
    w.git(&b, &["notes", NS, "append", "-m", &by_git, &objects["c1"]]);
    w.ok(
        &a,
        &[
            "notes",
            "write",
            "--agent",
            "data",
            "--type",
            "progress",
            "--content",
            "a",
            "--commit",
            &objects["c1"],
        ],
        None,
    );
    let written_by_git = lines_of(&git_show_all(&b, &git));
    for clone in [&a, &b, &a] {
        w.ok(clone, &["notes", "sync"], None);
    }
    for clone in [&a, &b] {
        let now = lines_of(&git_show_all(clone, &git));
        let lost: Vec<_> = written_by_git.difference(&now).collect();
        assert!(
            lost.is_empty(),
            "{}: lines lost or rewritten: {lost:?}",
            clone.display()
        );
    }
    assert_eq!(git_show_all(&a, &git), git_show_all(&b, &git));
}
