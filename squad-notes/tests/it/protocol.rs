//! The protocol layer: validation, namespace rules, append-only, batches.

use squad_notes::{ErrorKind, InMemoryNotes, Notes, NotesBackend, NotesRef, Oid};

use crate::common::{Repo, agent, entry};

fn oid(i: u32) -> Oid {
    format!("{i:040x}").parse().unwrap()
}

#[test]
fn write_then_show_and_list() {
    let notes = Notes::new(InMemoryNotes::new());
    let data = agent("data");
    let e1 = entry("data", "first");
    let e2 = entry("data", "second");
    let out = notes.write(&data, &oid(1), &e1).unwrap();
    assert!(out.changed);
    assert_eq!(out.attempts, 1);
    notes.write(&data, &oid(1), &e2).unwrap();
    notes.write(&data, &oid(2), &e2).unwrap();
    assert_eq!(
        notes.show(&data, &oid(1)).unwrap().entries,
        vec![e1, e2.clone()]
    );
    assert_eq!(notes.list(&data).unwrap(), vec![oid(1), oid(2)]);
    assert!(notes.show(&data, &oid(3)).unwrap().entries.is_empty());
    assert!(
        notes
            .show(&agent("nobody"), &oid(1))
            .unwrap()
            .entries
            .is_empty()
    );
    let all = notes.read_all(&data).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[1].1.entries, vec![e2]);
}

#[test]
fn another_agents_namespace_is_refused_and_nothing_changes() {
    let notes = Notes::new(InMemoryNotes::new());
    let worf = agent("worf");
    notes.write(&worf, &oid(1), &entry("worf", "mine")).unwrap();
    let before = notes.backend().tip(&NotesRef::squad(&worf)).unwrap();
    let err = notes
        .write(&worf, &oid(1), &entry("data", "intrusion"))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    assert!(
        err.to_string()
            .contains("agent data may not write to namespace refs/notes/squad/worf"),
        "{err}"
    );
    assert_eq!(
        notes.backend().tip(&NotesRef::squad(&worf)).unwrap(),
        before
    );
}

#[test]
fn shared_namespaces_accept_any_agent_but_are_append_only() {
    let notes = Notes::new(InMemoryNotes::new());
    for ns in ["research", "review"] {
        let ns = agent(ns);
        let e = entry("data", "finding");
        notes.write(&ns, &oid(1), &e).unwrap();
        notes
            .write(&ns, &oid(1), &entry("worf", "another"))
            .unwrap();
        // The same entry again: idempotent, nothing written.
        let again = notes.write(&ns, &oid(1), &e).unwrap();
        assert!(!again.changed);
        // The same id with other content would replace it: refused.
        let tip = notes.backend().tip(&NotesRef::squad(&ns)).unwrap();
        let mut changed = e.clone();
        changed.content = Some("rewritten history".into());
        let err = notes.write(&ns, &oid(1), &changed).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains("append-only"), "{err}");
        assert_eq!(notes.backend().tip(&NotesRef::squad(&ns)).unwrap(), tip);
        assert_eq!(notes.show(&ns, &oid(1)).unwrap().entries.len(), 2);
    }
}

/// Entries are append-only in the agent's own namespace too (issue 14: an existing id used to
/// replace the entry silently): the same bytes again are a no-op, other bytes are refused and
/// the error names `supersedes`.
#[test]
fn own_namespace_is_append_only_too() {
    let notes = Notes::new(InMemoryNotes::new());
    let data = agent("data");
    let e = entry("data", "draft");
    let other = entry("data", "other");
    notes.write(&data, &oid(1), &e).unwrap();
    notes.write(&data, &oid(1), &other).unwrap();
    let tip = notes.backend().tip(&NotesRef::squad(&data)).unwrap();
    assert!(!notes.write(&data, &oid(1), &e).unwrap().changed);
    let mut fixed = e.clone();
    fixed.content = Some("final".into());
    let err = notes.write(&data, &oid(1), &fixed).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("supersedes"), "{err}");
    assert!(err.to_string().contains(e.id.as_str()), "{err}");
    assert_eq!(notes.backend().tip(&NotesRef::squad(&data)).unwrap(), tip);
    // A batch that holds the same id twice with different bytes is refused as well.
    let mut twin = entry("data", "one");
    let mut twin2 = twin.clone();
    twin2.content = Some("two".into());
    twin.id = twin2.id.clone();
    let err = notes
        .write_batch(&data, &[(oid(2), twin), (oid(2), twin2)])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(notes.show(&data, &oid(1)).unwrap().entries, {
        let mut v = vec![e, other];
        v.sort_by(squad_model::NoteEntry::display_order);
        v
    });
}

#[test]
fn schema_violations_write_nothing() {
    let notes = Notes::new(InMemoryNotes::new());
    let data = agent("data");
    let mut bad = entry("data", "x");
    bad.effort_hours = Some(-2.0);
    let err = notes.write(&data, &oid(1), &bad).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("effort_hours"), "{err}");
    let mut bad = entry("data", "x");
    bad.extra
        .insert("confidence".into(), serde_json::json!("maybe"));
    bad.confidence = None;
    assert_eq!(
        notes.write(&data, &oid(1), &bad).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(notes.backend().tip(&NotesRef::squad(&data)).unwrap(), None);
}

#[test]
fn a_batch_is_one_commit_and_all_or_nothing() {
    let repo = Repo::new();
    let commits: Vec<Oid> = (0..3).map(|i| repo.commit(&format!("c{i}"))).collect();
    let notes = Notes::new(repo.backend());
    let data = agent("data");
    let batch: Vec<(Oid, _)> = (0..30)
        .map(|i| (commits[i % 3].clone(), entry("data", &format!("e{i}"))))
        .collect();
    notes.write_batch(&data, &batch).unwrap();
    assert_eq!(
        repo.git_ok(&["rev-list", "--count", "refs/notes/squad/data"])
            .trim(),
        "1"
    );
    for c in &commits {
        assert_eq!(notes.show(&data, c).unwrap().entries.len(), 10);
    }
    // One bad entry fails the whole batch.
    let tip = repo.rev("refs/notes/squad/data");
    let mut with_bad = vec![(commits[0].clone(), entry("data", "ok"))];
    with_bad.push((commits[1].clone(), entry("worf", "not yours")));
    assert_eq!(
        notes.write_batch(&data, &with_bad).unwrap_err().kind(),
        ErrorKind::PermissionDenied
    );
    assert_eq!(repo.rev("refs/notes/squad/data"), tip);
    assert_eq!(
        notes.write_batch(&data, &[]).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
}

/// A large batch (blobs written on several threads) lands completely, in one commit, readable by git.
#[test]
fn a_large_batch_lands_completely() {
    let repo = Repo::new();
    let notes = Notes::new(repo.backend());
    let data = agent("data");
    let batch: Vec<(Oid, _)> = (0..700u32)
        .map(|i| {
            let object = format!("{:08x}{:032x}", i.wrapping_mul(2_654_435_761), i);
            (object.parse().unwrap(), entry("data", &format!("e{i}")))
        })
        .collect();
    notes.write_batch(&data, &batch).unwrap();
    assert_eq!(
        repo.git_ok(&["rev-list", "--count", "refs/notes/squad/data"])
            .trim(),
        "1"
    );
    assert_eq!(
        repo.git_ok(&["notes", "--ref=squad/data", "list"])
            .lines()
            .count(),
        700
    );
    // Packed: bulk reads follow the pack order; both halves must agree.
    let loose = notes.read_all(&data).unwrap();
    repo.git_ok(&["repack", "-adq"]);
    let all = notes.read_all(&data).unwrap();
    assert_eq!(all, loose);
    assert_eq!(all.len(), 700);
    assert!(
        all.iter()
            .all(|(_, n)| n.entries.len() == 1 && n.unparsed.is_empty())
    );
    let (object, e) = &batch[456];
    let git = repo.git_ok(&["notes", "--ref=squad/data", "show", object.as_str()]);
    assert_eq!(git, e.to_line());
    repo.fsck();
}

/// A batch over the pack threshold is written as one pack: git reads it, fsck is clean, no loose objects.
#[test]
fn a_batch_over_the_pack_threshold_is_written_as_a_pack() {
    let repo = Repo::new();
    let c = repo.commit("one");
    let notes = Notes::new(repo.backend().with_pack_threshold(100));
    let data = agent("data");
    notes
        .write(&data, &c, &entry("data", "first, loose"))
        .unwrap();
    let loose_before = repo.git_ok(&["count-objects"]);
    let batch: Vec<(Oid, _)> = (0..300u32)
        .map(|i| {
            let object = format!("{:08x}{:032x}", i.wrapping_mul(2_654_435_761), i);
            (object.parse().unwrap(), entry("data", &format!("e{i}")))
        })
        .chain(std::iter::once((
            c.clone(),
            entry("data", "second, packed"),
        )))
        .collect();
    notes.write_batch(&data, &batch).unwrap();
    let loose = |out: String| out.split(' ').next().unwrap().parse::<u32>().unwrap();
    assert_eq!(
        loose(repo.git_ok(&["count-objects"])),
        loose(loose_before) + 1,
        "only the notes commit is loose"
    );
    let packs = repo.git_ok(&["count-objects", "-v"]);
    assert!(packs.contains("packs: 1"), "{packs}");
    assert_eq!(
        repo.git_ok(&["notes", "--ref=squad/data", "list"])
            .lines()
            .count(),
        301
    );
    assert_eq!(
        repo.git_ok(&["notes", "--ref=squad/data", "show", c.as_str()])
            .lines()
            .count(),
        2
    );
    let (object, e) = &batch[123];
    assert_eq!(
        repo.git_ok(&["notes", "--ref=squad/data", "show", object.as_str()]),
        e.to_line()
    );
    assert_eq!(notes.show(&data, &c).unwrap().entries.len(), 2);
    // And a later single write goes on top, loose as usual.
    notes.write(&data, &c, &entry("data", "third")).unwrap();
    assert_eq!(notes.show(&data, &c).unwrap().entries.len(), 3);
    repo.fsck();
}
