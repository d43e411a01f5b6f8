//! The conformance suite every [`NotesBackend`] must pass (feature `conformance`).
//!
//! Exempt from semver: scenarios are added as the contract is sharpened.
//! Each scenario takes a fresh, empty backend; [`run_all`] runs them all, each on a new backend
//! from `make`. Call it for your concrete type, for `Box` of it and for `Arc<dyn NotesBackend>`:
//!
//! ```
//! use std::sync::Arc;
//! use squad_notes::{InMemoryNotes, NotesBackend, conformance};
//!
//! conformance::run_all(&mut || InMemoryNotes::new());
//! conformance::run_all(&mut || Box::new(InMemoryNotes::new()));
//! conformance::run_all(&mut || -> Arc<dyn NotesBackend> { Arc::new(InMemoryNotes::new()) });
//! ```
//!
//! A failed check panics with a message naming the scenario and the broken sentence of the contract.

use std::cell::RefCell;
use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::backend::{NoteEdit, NotesBackend};
use crate::error::ErrorKind;
use crate::oid::{NotesRef, Oid};

fn r(name: &str) -> NotesRef {
    NotesRef::new(name).expect("valid test ref")
}

/// Test objects whose ids share prefixes, so that fanout directories are exercised.
pub fn object(i: usize) -> Oid {
    const PREFIXES: [&str; 6] = ["aa", "ab", "aabb", "ff", "00", "aabc"];
    let p = PREFIXES[i % PREFIXES.len()];
    let mut hex = format!("{p}{:0>width$x}", i, width = 40 - p.len());
    hex.truncate(40);
    Oid::new(&hex).expect("valid test oid")
}

/// The error's message followed by its chain of sources (`message: cause: cause`).
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

#[track_caller]
fn ok<T>(scenario: &str, r: crate::Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!(
            "{scenario}: unexpected error: {} ({:?})",
            with_sources(&e),
            e.kind()
        ),
    }
}

#[track_caller]
fn conflict<T: std::fmt::Debug>(scenario: &str, r: crate::Result<T>) {
    match r {
        Err(e) if e.kind() == ErrorKind::Conflict => {}
        other => panic!("{scenario}: update must fail with Conflict, got {other:?}"),
    }
}

/// `tip` of a ref that was never written is `None`.
pub fn missing_ref_has_no_tip<B: NotesBackend + ?Sized>(b: &B) {
    let s = "missing_ref_has_no_tip";
    assert_eq!(ok(s, b.tip(&r("refs/notes/squad/nobody"))), None, "{s}");
}

/// Bytes round-trip verbatim: no newline added or removed, binary data kept.
pub fn bytes_round_trip_verbatim<B: NotesBackend + ?Sized>(b: &B) {
    let s = "bytes_round_trip_verbatim";
    let nr = r("refs/notes/squad/data");
    let blobs: [&[u8]; 4] = [b"no newline", b"two\n\n", b"\x00\xff binary", b""];
    let edits: Vec<NoteEdit> = blobs
        .iter()
        .enumerate()
        .map(|(i, bytes)| NoteEdit::set(object(i), *bytes))
        .collect();
    let tip = ok(s, b.update(&nr, None, &edits, "add\n"));
    assert_eq!(
        ok(s, b.tip(&nr)),
        Some(tip.clone()),
        "{s}: the ref moved to the returned tip"
    );
    for (i, bytes) in blobs.iter().enumerate() {
        assert_eq!(
            ok(s, b.read(&tip, &object(i))),
            Some(bytes.to_vec()),
            "{s}: object {i}"
        );
    }
    assert_eq!(
        ok(s, b.read(&tip, &object(5))),
        None,
        "{s}: an object without a note"
    );
}

/// A stale expected tip, or `None` for an existing ref, is a `Conflict` and changes nothing.
pub fn stale_update_is_a_conflict<B: NotesBackend + ?Sized>(b: &B) {
    let s = "stale_update_is_a_conflict";
    let nr = r("refs/notes/squad/data");
    let t1 = ok(
        s,
        b.update(&nr, None, &[NoteEdit::set(object(0), "1\n")], "m\n"),
    );
    let t2 = ok(
        s,
        b.update(&nr, Some(&t1), &[NoteEdit::set(object(0), "2\n")], "m\n"),
    );
    assert_ne!(t1, t2, "{s}: every update gives a new tip");
    conflict(
        s,
        b.update(&nr, Some(&t1), &[NoteEdit::set(object(0), "3\n")], "m\n"),
    );
    conflict(
        s,
        b.update(&nr, None, &[NoteEdit::set(object(0), "4\n")], "m\n"),
    );
    assert_eq!(
        ok(s, b.tip(&nr)),
        Some(t2.clone()),
        "{s}: a failed update changes nothing"
    );
    assert_eq!(ok(s, b.read(&t2, &object(0))), Some(b"2\n".to_vec()), "{s}");
    // An expected tip for a ref that does not exist is a conflict too.
    conflict(
        s,
        b.update(
            &r("refs/notes/squad/other"),
            Some(&t2),
            &[NoteEdit::set(object(0), "x")],
            "m\n",
        ),
    );
    assert_eq!(ok(s, b.tip(&r("refs/notes/squad/other"))), None, "{s}");
}

/// Old tips stay readable and unchanged after the ref moved.
pub fn tips_are_snapshots<B: NotesBackend + ?Sized>(b: &B) {
    let s = "tips_are_snapshots";
    let nr = r("refs/notes/squad/data");
    let t1 = ok(
        s,
        b.update(&nr, None, &[NoteEdit::set(object(0), "old\n")], "m\n"),
    );
    let t2 = ok(
        s,
        b.update(
            &nr,
            Some(&t1),
            &[
                NoteEdit::set(object(0), "new\n"),
                NoteEdit::set(object(1), "b\n"),
            ],
            "m\n",
        ),
    );
    assert_eq!(
        ok(s, b.read(&t1, &object(0))),
        Some(b"old\n".to_vec()),
        "{s}"
    );
    assert_eq!(ok(s, b.list(&t1)), vec![object(0)], "{s}");
    assert_eq!(
        ok(s, b.read(&t2, &object(0))),
        Some(b"new\n".to_vec()),
        "{s}"
    );
}

/// Many edits in one update; removal; removing a missing note; the last edit of an object wins;
/// `list` and `read_all` are sorted and agree with `read`.
pub fn edits_remove_and_list<B: NotesBackend + ?Sized>(b: &B) {
    let s = "edits_remove_and_list";
    let nr = r("refs/notes/squad/data");
    let edits: Vec<NoteEdit> = (0..6)
        .map(|i| NoteEdit::set(object(i), format!("{i}\n")))
        .collect();
    let t1 = ok(s, b.update(&nr, None, &edits, "m\n"));
    let mut want: Vec<Oid> = (0..6).map(object).collect();
    want.sort();
    assert_eq!(ok(s, b.list(&t1)), want, "{s}: list is sorted");
    let t2 = ok(
        s,
        b.update(
            &nr,
            Some(&t1),
            &[
                NoteEdit::remove(object(2)),
                NoteEdit::remove(object(7)),
                NoteEdit::set(object(3), "first"),
                NoteEdit::set(object(3), "last"),
            ],
            "m\n",
        ),
    );
    assert_eq!(ok(s, b.read(&t2, &object(2))), None, "{s}: removed");
    assert_eq!(
        ok(s, b.read(&t2, &object(3))),
        Some(b"last".to_vec()),
        "{s}: last edit wins"
    );
    let all = ok(s, b.read_all(&t2));
    let listed = ok(s, b.list(&t2));
    assert_eq!(
        all.iter().map(|(o, _)| o.clone()).collect::<Vec<_>>(),
        listed,
        "{s}"
    );
    let parsed = ok(s, b.read_all_parsed(&t2));
    assert_eq!(
        parsed,
        all.iter()
            .map(|(o, bytes)| (o.clone(), crate::format::parse_note(bytes)))
            .collect::<Vec<_>>(),
        "{s}: read_all_parsed is read_all, parsed"
    );
    for (o, bytes) in all {
        assert_eq!(
            ok(s, b.read(&t2, &o)),
            Some(bytes),
            "{s}: read_all agrees with read"
        );
    }
    // Removing every note keeps the ref, with an empty list.
    let rm: Vec<NoteEdit> = listed.into_iter().map(NoteEdit::remove).collect();
    let t3 = ok(s, b.update(&nr, Some(&t2), &rm, "m\n"));
    assert!(ok(s, b.list(&t3)).is_empty(), "{s}: all removed");
}

/// An update without edits is `InvalidInput` and creates nothing.
pub fn empty_update_is_invalid<B: NotesBackend + ?Sized>(b: &B) {
    let s = "empty_update_is_invalid";
    let nr = r("refs/notes/squad/data");
    match b.update(&nr, None, &[], "m\n") {
        Err(e) if e.kind() == ErrorKind::InvalidInput => {}
        other => panic!("{s}: expected InvalidInput, got {other:?}"),
    }
    assert_eq!(ok(s, b.tip(&nr)), None, "{s}");
}

/// Refs are independent of each other.
pub fn refs_are_independent<B: NotesBackend + ?Sized>(b: &B) {
    let s = "refs_are_independent";
    let a = r("refs/notes/squad/a");
    let c = r("refs/notes/squad/c");
    let ta = ok(
        s,
        b.update(&a, None, &[NoteEdit::set(object(0), "a\n")], "m\n"),
    );
    let tc = ok(
        s,
        b.update(&c, None, &[NoteEdit::set(object(1), "c\n")], "m\n"),
    );
    assert_eq!(ok(s, b.list(&ta)), vec![object(0)], "{s}");
    assert_eq!(ok(s, b.list(&tc)), vec![object(1)], "{s}");
    assert_eq!(ok(s, b.tip(&a)), Some(ta), "{s}");
}

#[derive(Debug, Clone)]
enum Op {
    Update(Vec<(usize, Option<Vec<u8>>)>),
    Stale(Vec<(usize, Option<Vec<u8>>)>),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let edit = (
        0usize..8,
        proptest::option::weighted(0.75, proptest::collection::vec(any::<u8>(), 0..12)),
    );
    let edits = proptest::collection::vec(edit, 1..5);
    prop_oneof![
        4 => edits.clone().prop_map(Op::Update),
        1 => edits.prop_map(Op::Stale),
    ]
}

/// Random operation sequences against a `BTreeMap` oracle: after every step `tip`, `read`,
/// `list` and `read_all` agree with the model, stale updates conflict and change nothing, and
/// every earlier tip still reads as its snapshot.
pub fn model_test<B: NotesBackend>(make: &mut dyn FnMut() -> B, cases: u32) {
    let make = RefCell::new(make);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = proptest::collection::vec(op_strategy(), 1..12);
    let result = runner.run(&strategy, |ops| {
        let b = (make.borrow_mut())();
        let nr = r("refs/notes/squad/model");
        let mut model: BTreeMap<Oid, Vec<u8>> = BTreeMap::new();
        let mut history: Vec<(Oid, BTreeMap<Oid, Vec<u8>>)> = Vec::new();
        let mut tip: Option<Oid> = None;
        let err = |e: crate::Error| TestCaseError::fail(with_sources(&e));
        for op in ops {
            match op {
                Op::Update(edits) => {
                    let edits: Vec<NoteEdit> = edits
                        .into_iter()
                        .map(|(i, blob)| NoteEdit {
                            object: object(i),
                            blob,
                        })
                        .collect();
                    let new_tip = b.update(&nr, tip.as_ref(), &edits, "m\n").map_err(err)?;
                    for e in &edits {
                        match &e.blob {
                            Some(bytes) => model.insert(e.object.clone(), bytes.clone()),
                            None => model.remove(&e.object),
                        };
                    }
                    history.push((new_tip.clone(), model.clone()));
                    tip = Some(new_tip);
                }
                Op::Stale(edits) => {
                    let Some(current) = tip.clone() else { continue };
                    let stale = history.iter().rev().nth(1).map(|(t, _)| t.clone());
                    let edits: Vec<NoteEdit> = edits
                        .into_iter()
                        .map(|(i, blob)| NoteEdit {
                            object: object(i),
                            blob,
                        })
                        .collect();
                    let r = b.update(&nr, stale.as_ref(), &edits, "m\n");
                    prop_assert!(
                        matches!(&r, Err(e) if e.kind() == ErrorKind::Conflict),
                        "stale update must conflict, got {:?}",
                        r
                    );
                    prop_assert_eq!(b.tip(&nr).map_err(err)?, Some(current));
                }
            }
            prop_assert_eq!(b.tip(&nr).map_err(err)?, tip.clone());
            if let Some(t) = &tip {
                let listed = b.list(t).map_err(err)?;
                prop_assert_eq!(&listed, &model.keys().cloned().collect::<Vec<_>>());
                for i in 0..8 {
                    prop_assert_eq!(
                        b.read(t, &object(i)).map_err(err)?,
                        model.get(&object(i)).cloned()
                    );
                }
                let all = b.read_all(t).map_err(err)?;
                prop_assert_eq!(all, model.clone().into_iter().collect::<Vec<_>>());
            }
        }
        for (t, snapshot) in &history {
            let all = b.read_all(t).map_err(err)?;
            prop_assert_eq!(all, snapshot.clone().into_iter().collect::<Vec<_>>());
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("model_test: {e}");
    }
}

#[track_caller]
fn kind<T: std::fmt::Debug>(scenario: &str, want: ErrorKind, r: crate::Result<T>) {
    match r {
        Err(e) if e.kind() == want => {}
        other => panic!("{scenario}: expected {want:?}, got {other:?}"),
    }
}

/// `list_refs`, `is_ancestor`, `fast_forward` and `merge`, as [`sync`](crate::sync) uses them:
/// a merge has both tips as ancestors and the edited notes of the first; a fast-forward only
/// moves forward; both are compare-and-swap.
pub fn merge_and_fast_forward<B: NotesBackend + ?Sized>(b: &B) {
    let s = "merge_and_fast_forward";
    let ours = r("refs/notes/squad/data");
    let theirs = r("refs/notes/remotes/origin/squad/data");
    let t0 = ok(
        s,
        b.update(&ours, None, &[NoteEdit::set(object(0), "base\n")], "m\n"),
    );
    ok(s, b.fast_forward(&theirs, None, &t0));
    assert_eq!(
        ok(s, b.tip(&theirs)),
        Some(t0.clone()),
        "{s}: fast-forward of a new ref"
    );
    let t1 = ok(
        s,
        b.update(
            &ours,
            Some(&t0),
            &[NoteEdit::set(object(1), "ours\n")],
            "m\n",
        ),
    );
    let t2 = ok(
        s,
        b.update(
            &theirs,
            Some(&t0),
            &[NoteEdit::set(object(2), "theirs\n")],
            "m\n",
        ),
    );
    assert!(
        ok(s, b.is_ancestor(&t0, &t1)),
        "{s}: the parent is an ancestor"
    );
    assert!(
        ok(s, b.is_ancestor(&t1, &t1)),
        "{s}: a tip is its own ancestor"
    );
    assert!(
        !ok(s, b.is_ancestor(&t1, &t0)),
        "{s}: a child is not an ancestor"
    );
    assert!(!ok(s, b.is_ancestor(&t1, &t2)), "{s}: diverged tips");
    kind(
        s,
        ErrorKind::InvalidInput,
        b.fast_forward(&ours, Some(&t1), &t2),
    );
    conflict(s, b.fast_forward(&ours, Some(&t0), &t2));
    conflict(s, b.fast_forward(&ours, None, &t2));
    assert_eq!(
        ok(s, b.tip(&ours)),
        Some(t1.clone()),
        "{s}: a refused fast-forward changes nothing"
    );
    let edit = [NoteEdit::set(object(2), "theirs\n")];
    conflict(s, b.merge(&ours, &t0, &t2, &edit, "Merged\n"));
    let m = ok(s, b.merge(&ours, &t1, &t2, &edit, "Merged\n"));
    assert_eq!(
        ok(s, b.tip(&ours)),
        Some(m.clone()),
        "{s}: the merge moved the ref"
    );
    assert!(
        ok(s, b.is_ancestor(&t1, &m)) && ok(s, b.is_ancestor(&t2, &m)),
        "{s}: both parents are ancestors"
    );
    assert!(ok(s, b.is_ancestor(&t0, &m)), "{s}: ancestry is transitive");
    assert_eq!(
        ok(s, b.list(&m)),
        {
            let mut all = vec![object(0), object(1), object(2)];
            all.sort();
            all
        },
        "{s}: merged notes"
    );
    assert_eq!(
        ok(s, b.read(&m, &object(1))),
        Some(b"ours\n".to_vec()),
        "{s}"
    );
    assert_eq!(
        ok(s, b.read(&m, &object(2))),
        Some(b"theirs\n".to_vec()),
        "{s}"
    );
    // A merge without edits still records the other side.
    let m2 = ok(s, b.merge(&ours, &m, &t2, &[], "Merged\n"));
    assert_ne!(m2, m, "{s}: a merge gives a new tip");
    assert_eq!(
        ok(s, b.read_all(&m2)),
        ok(s, b.read_all(&m)),
        "{s}: an empty merge keeps the notes"
    );
    ok(s, b.fast_forward(&theirs, Some(&t2), &m2));
    assert_eq!(
        ok(s, b.tip(&theirs)),
        Some(m2.clone()),
        "{s}: fast-forward to a merge"
    );
    assert_eq!(
        ok(s, b.list_refs("refs/notes/squad/")),
        vec![(ours.clone(), m2.clone())],
        "{s}: list_refs filters by prefix"
    );
    assert_eq!(
        ok(s, b.list_refs("refs/notes/")),
        vec![(theirs.clone(), m2.clone()), (ours.clone(), m2.clone())],
        "{s}: list_refs is sorted by name"
    );
    let unknown = Oid::new("0123456789012345678901234567890123456789").expect("valid oid");
    kind(s, ErrorKind::NotFound, b.is_ancestor(&unknown, &m2));
    kind(
        s,
        ErrorKind::NotFound,
        b.fast_forward(&r("refs/notes/squad/x"), None, &unknown),
    );
    kind(
        s,
        ErrorKind::NotFound,
        b.merge(&ours, &m2, &unknown, &[], "Merged\n"),
    );
    assert_eq!(
        ok(s, b.tip(&ours)),
        Some(m2),
        "{s}: failed calls change nothing"
    );
    assert_eq!(ok(s, b.tip(&r("refs/notes/squad/x"))), None, "{s}");
}

/// Runs every scenario, each on a fresh backend from `make`, and the model test with 16 cases.
pub fn run_all<B: NotesBackend>(make: &mut dyn FnMut() -> B) {
    missing_ref_has_no_tip(&make());
    bytes_round_trip_verbatim(&make());
    stale_update_is_a_conflict(&make());
    tips_are_snapshots(&make());
    edits_remove_and_list(&make());
    empty_update_is_invalid(&make());
    refs_are_independent(&make());
    merge_and_fast_forward(&make());
    model_test(make, 16);
}
