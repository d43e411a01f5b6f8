//! Interop both ways with the real git CLI.

use squad_notes::{GixNotes, Notes, NotesBackend, NotesBackendExt, NotesRef, Oid};

use crate::common::{Repo, agent, entry};

fn hex(i: u32, prefix: &str) -> String {
    let mut h = format!("{prefix}{i:0>38x}");
    h.truncate(40);
    h
}

#[test]
fn what_we_write_git_shows_lists_and_logs() {
    let repo = Repo::new();
    let c1 = repo.commit("one");
    let c2 = repo.commit("two");
    let notes = Notes::new(repo.backend());
    let data = agent("data");
    let (e1, e2, e3) = (entry("data", "a"), entry("data", "b"), entry("data", "c"));
    notes.write(&data, &c1, &e1).unwrap();
    notes.write(&data, &c1, &e2).unwrap();
    notes.write(&data, &c2, &e3).unwrap();

    let shown = repo.git_ok(&["notes", "--ref=squad/data", "show", c1.as_str()]);
    assert_eq!(shown, format!("{}{}", e1.to_line(), e2.to_line()));
    let listed = repo.git_ok(&["notes", "--ref=squad/data", "list"]);
    let mut annotated: Vec<&str> = listed
        .lines()
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect();
    annotated.sort();
    let mut want = vec![c1.as_str(), c2.as_str()];
    want.sort();
    assert_eq!(annotated, want);
    let log = repo.git_ok(&[
        "log",
        "--notes=squad/data",
        "--format=%H%n%N",
        "-n1",
        c2.as_str(),
    ]);
    assert_eq!(log, format!("{c2}\n{}\n", e3.to_line()));

    // Git's own commit message and reflog message; three commits, each on the previous one.
    let commit = repo.git_ok(&["cat-file", "commit", "refs/notes/squad/data"]);
    assert!(
        commit.ends_with("\n\nNotes added by 'git notes append'\n"),
        "{commit}"
    );
    assert_eq!(
        repo.git_ok(&["rev-list", "--count", "refs/notes/squad/data"])
            .trim(),
        "3"
    );
    let reflog = repo.git_ok(&["reflog", "show", "--format=%gs", "refs/notes/squad/data"]);
    assert!(
        reflog
            .lines()
            .all(|l| l == "notes: Notes added by 'git notes append'"),
        "{reflog}"
    );
    repo.fsck();
}

#[test]
fn we_read_git_add_append_and_no_separator() {
    let repo = Repo::new();
    let c1 = repo.commit("one");
    let c2 = repo.commit("two");
    let (e1, e2, e3) = (entry("data", "a"), entry("data", "b"), entry("data", "c"));
    let line = |e: &squad_model::NoteEntry| e.to_line().trim_end().to_owned();
    repo.git_ok(&[
        "notes",
        "--ref=squad/data",
        "add",
        "-m",
        &line(&e1),
        c1.as_str(),
    ]);
    repo.git_ok(&[
        "notes",
        "--ref=squad/data",
        "append",
        "-m",
        &line(&e2),
        c1.as_str(),
    ]);
    repo.git_ok(&[
        "notes",
        "--ref=squad/data",
        "append",
        "--no-separator",
        "-m",
        &line(&e3),
        c1.as_str(),
    ]);
    repo.git_ok(&[
        "notes",
        "--ref=squad/data",
        "append",
        "-m",
        &line(&e1),
        c1.as_str(),
    ]);
    repo.git_ok(&[
        "notes",
        "--ref=squad/data",
        "add",
        "-m",
        "a human wrote this",
        c2.as_str(),
    ]);

    let notes = Notes::new(repo.backend());
    let data = agent("data");
    let shown = notes.show(&data, &c1).unwrap();
    assert_eq!(shown.entries, vec![e1, e2, e3.clone()]);
    assert!(shown.unparsed.is_empty());
    let human = notes.show(&data, &c2).unwrap();
    assert!(human.entries.is_empty());
    assert_eq!(human.unparsed[0].text, "a human wrote this");
    assert_eq!(human.unparsed[0].line, 1);

    // Our append after git's: git reads both, we keep git's bytes verbatim.
    let before = repo.git_ok(&["notes", "--ref=squad/data", "show", c2.as_str()]);
    let e4 = entry("data", "d");
    notes.write(&data, &c2, &e4).unwrap();
    let after = repo.git_ok(&["notes", "--ref=squad/data", "show", c2.as_str()]);
    assert_eq!(after, format!("{before}{}", e4.to_line()));
    // And git appends after ours.
    repo.git_ok(&[
        "notes",
        "--ref=squad/data",
        "append",
        "-m",
        &line(&e3),
        c2.as_str(),
    ]);
    let ids: Vec<_> = notes
        .show(&data, &c2)
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(ids, vec![e3.id.clone(), e4.id]);
    repo.fsck();
}

/// A notes tree made by `git fast-import` holding every layout at once: flat (libgit2), 2/38,
/// 2/2/36, an object with entries at two depths, and a non-note file.
#[test]
fn we_read_and_repair_mixed_fanout_with_duplicates_from_fast_import() {
    let repo = Repo::new();
    let flat = hex(1, "11");
    let two = hex(2, "22");
    let three = hex(3, "33");
    let dup = hex(4, "44");
    let es: Vec<_> = (0..5).map(|i| entry("data", &format!("e{i}"))).collect();
    let mut stream = String::new();
    for (i, e) in es.iter().enumerate() {
        let line = e.to_line();
        stream.push_str(&format!(
            "blob\nmark :{}\ndata {}\n{line}\n",
            i + 1,
            line.len()
        ));
    }
    stream.push_str("blob\nmark :9\ndata 6\nhello\n\n");
    stream.push_str("commit refs/notes/squad/data\ncommitter Squad Test <squad@test.invalid> 1700000000 +0000\ndata 8\nfixture\n");
    stream.push_str(&format!("M 100644 :1 {flat}\n"));
    stream.push_str(&format!("M 100644 :2 {}/{}\n", &two[..2], &two[2..]));
    stream.push_str(&format!(
        "M 100644 :3 {}/{}/{}\n",
        &three[..2],
        &three[2..4],
        &three[4..]
    ));
    stream.push_str(&format!("M 100644 :4 {dup}\n"));
    stream.push_str(&format!("M 100644 :5 {}/{}\n", &dup[..2], &dup[2..]));
    stream.push_str("M 100644 :9 README\n\n");
    repo.git_stdin(&["fast-import", "--quiet"], stream.as_bytes());

    let backend = repo.backend();
    let nr = NotesRef::new("refs/notes/squad/data").unwrap();
    let tip = backend.tip(&nr).unwrap().unwrap();
    let mut want: Vec<Oid> = [&flat, &two, &three, &dup]
        .iter()
        .map(|h| h.parse().unwrap())
        .collect();
    want.sort();
    assert_eq!(backend.list(&tip).unwrap(), want);
    // Every note reads exactly as git shows it, duplicates joined as git joins them.
    for h in [&flat, &two, &three, &dup] {
        let ours = backend.read(&tip, &h.parse().unwrap()).unwrap().unwrap();
        let git = repo.git_ok(&["notes", "--ref=squad/data", "show", h]);
        assert_eq!(String::from_utf8(ours).unwrap(), git, "object {h}");
    }
    let notes = Notes::new(backend.clone());
    let data = agent("data");
    let shown = notes.show(&data, &dup.parse().unwrap()).unwrap();
    assert_eq!(shown.entries.len(), 2);
    assert!(shown.unparsed.is_empty());

    // Writing to the duplicated object leaves exactly one entry for it; the rest is untouched.
    let e = entry("data", "new");
    notes.write(&data, &dup.parse().unwrap(), &e).unwrap();
    let tree = repo.git_ok(&["ls-tree", "-r", "--name-only", "refs/notes/squad/data"]);
    let dup_paths: Vec<_> = tree.lines().filter(|p| p.replace('/', "") == dup).collect();
    assert_eq!(dup_paths.len(), 1, "{tree}");
    assert!(
        tree.lines().any(|p| p == "README"),
        "non-notes are kept: {tree}"
    );
    assert_eq!(
        notes
            .show(&data, &dup.parse().unwrap())
            .unwrap()
            .entries
            .len(),
        3
    );
    let git = repo.git_ok(&["notes", "--ref=squad/data", "show", &dup]);
    assert_eq!(git.lines().filter(|l| !l.is_empty()).count(), 3, "{git}");
    for h in [&flat, &two, &three] {
        let git = repo.git_ok(&["notes", "--ref=squad/data", "show", h]);
        assert_eq!(
            notes
                .show(&data, &h.parse().unwrap())
                .unwrap()
                .entries
                .len(),
            1,
            "{git}"
        );
    }
    repo.fsck();
}

/// libgit2 writes flat trees; our first write fans it out as git would, and git agrees on every note.
#[test]
fn a_flat_libgit2_style_tree_is_read_and_fanned_out_on_write() {
    let repo = Repo::new();
    let e = entry("data", "x");
    let line = e.to_line();
    let mut stream = format!("blob\nmark :1\ndata {}\n{line}\n", line.len());
    stream.push_str("commit refs/notes/squad/data\ncommitter Squad Test <squad@test.invalid> 1700000000 +0000\ndata 4\nflat\n");
    let objects: Vec<String> = (0..300u32)
        .map(|i| format!("{:08x}{:032x}", i.wrapping_mul(2_654_435_761), i))
        .collect();
    for o in &objects {
        stream.push_str(&format!("M 100644 :1 {o}\n"));
    }
    stream.push('\n');
    repo.git_stdin(&["fast-import", "--quiet"], stream.as_bytes());
    let root = repo.git_ok(&["ls-tree", "--name-only", "refs/notes/squad/data"]);
    assert_eq!(root.lines().count(), 300, "flat fixture");

    let notes = Notes::new(repo.backend());
    let data = agent("data");
    assert_eq!(notes.list(&data).unwrap().len(), 300);
    let first: Oid = objects[0].parse().unwrap();
    assert_eq!(notes.show(&data, &first).unwrap().entries, vec![e.clone()]);
    let e2 = entry("data", "y");
    notes.write(&data, &first, &e2).unwrap();
    let root = repo.git_ok(&["ls-tree", "refs/notes/squad/data"]);
    assert!(
        root.lines()
            .all(|l| l.contains(" tree ") && l.split('\t').nth(1).unwrap().len() == 2),
        "fanned out: {root}"
    );
    let listed = repo.git_ok(&["notes", "--ref=squad/data", "list"]);
    assert_eq!(listed.lines().count(), 300);
    assert_eq!(
        repo.git_ok(&["notes", "--ref=squad/data", "show", &objects[0]]),
        format!("{line}{}", e2.to_line())
    );
    repo.fsck();
}

/// Many writes by us, one at a time: the fanout is what git's notes code makes, so git's own
/// next write keeps it, and git reads every note.
#[test]
fn our_fanout_matches_git_and_git_keeps_writing_on_it() {
    let repo = Repo::new();
    let backend = repo.backend();
    let notes = Notes::new(&backend);
    let data = agent("data");
    let objects: Vec<Oid> = (0..150u32)
        .map(|i| {
            format!("{:08x}{:032x}", i.wrapping_mul(2_654_435_761), i)
                .parse()
                .unwrap()
        })
        .collect();
    for o in &objects {
        notes.write(&data, o, &entry("data", "n")).unwrap();
    }
    let root = repo.git_ok(&["ls-tree", "--name-only", "refs/notes/squad/data"]);
    assert!(
        root.lines().all(|l| l.len() == 2),
        "git-style fanout after 150 notes: {root}"
    );
    repo.git_ok(&[
        "notes",
        "--ref=squad/data",
        "add",
        "-f",
        "-m",
        "by git",
        objects[0].as_str(),
    ]);
    assert_eq!(
        repo.git_ok(&["notes", "--ref=squad/data", "list"])
            .lines()
            .count(),
        150
    );
    let nr = NotesRef::squad(&data);
    assert_eq!(backend.list_current(&nr).unwrap().len(), 150);
    assert_eq!(
        backend.read_current(&nr, &objects[0]).unwrap().unwrap(),
        b"by git\n"
    );
    repo.fsck();
}

#[test]
fn resolve_commit_finds_revisions_and_names_missing_ones() {
    let repo = Repo::new();
    let c = repo.commit("one");
    let b = GixNotes::open(repo.path()).unwrap();
    assert_eq!(b.resolve_commit("HEAD").unwrap(), c);
    assert_eq!(b.resolve_commit(&c.as_str()[..10]).unwrap(), c);
    let err = b.resolve_commit("no-such-branch").unwrap_err();
    assert_eq!(err.kind(), squad_notes::ErrorKind::NotFound);
    assert!(err.to_string().contains("no-such-branch"));
    assert_eq!(
        b.resolve_commit("1111111111111111111111111111111111111111")
            .unwrap_err()
            .kind(),
        squad_notes::ErrorKind::NotFound
    );
}

/// Two lines of history merged by `git notes merge` with the strategies the protocol allows:
/// every entry reads back once, in order, whatever the strategy did to the text.
#[test]
fn we_read_git_notes_merge_union_and_cat_sort_uniq() {
    for strategy in ["cat_sort_uniq", "union"] {
        let repo = Repo::new();
        let c = repo.commit("one");
        let notes = Notes::new(repo.backend());
        let (data, other) = (agent("data"), agent("other"));
        let base = entry("data", "base");
        notes.write(&data, &c, &base).unwrap();
        repo.git_ok(&[
            "update-ref",
            "refs/notes/squad/other",
            "refs/notes/squad/data",
        ]);
        let ours = entry("data", "ours");
        let theirs = entry("other", "theirs");
        notes.write(&data, &c, &ours).unwrap();
        notes.write(&other, &c, &theirs).unwrap();
        repo.git_ok(&[
            "notes",
            "--ref=squad/data",
            "merge",
            "-q",
            "-s",
            strategy,
            "refs/notes/squad/other",
        ]);
        let shown = notes.show(&data, &c).unwrap();
        assert_eq!(
            shown.entries,
            vec![base.clone(), ours, theirs],
            "{strategy}"
        );
        assert!(
            shown.unparsed.is_empty(),
            "{strategy}: {:?}",
            shown.unparsed
        );
        repo.fsck();
    }
}
