//! The conformance suite for [`StateStore`] implementations (feature `conformance`).
//!
//! Every function checks one part of the trait's `# Contract` / `# Behavior` and panics with a
//! message naming the broken rule. [`run_all`] runs them all. Each scenario starts by deleting
//! every key of the store, so run the suite against a scratch store.
//!
//! This module is exempt from semver: scenarios are added as the contract is sharpened.
//!
//! ```
//! use std::sync::Arc;
//! use squad_notes::state::{conformance, InMemoryStateStore, StateStore};
//!
//! conformance::run_all(&InMemoryStateStore::new());
//! conformance::run_all(&Box::new(InMemoryStateStore::new()));
//! let shared: Arc<dyn StateStore> = Arc::new(InMemoryStateStore::new());
//! conformance::run_all(&shared);
//! ```

use std::collections::BTreeMap;
use std::fmt::Debug;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use super::{StateEdit, StateStore, StateStoreExt};
use crate::conformance::with_sources;
use crate::{ErrorKind, Result};

/// Appending threads in [`concurrent_appends_lose_nothing`].
pub const APPEND_THREADS: usize = 8;
/// Appends per thread in [`concurrent_appends_lose_nothing`].
pub const APPENDS_PER_THREAD: usize = 50;

#[track_caller]
fn ok<T>(r: Result<T>, what: &str) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!(
            "{what}: unexpected error ({:?}): {}",
            e.kind(),
            with_sources(&e)
        ),
    }
}

#[track_caller]
fn invalid<T: Debug>(r: Result<T>, what: &str) {
    match r {
        Err(e) if e.kind() == ErrorKind::InvalidInput => {}
        Err(e) => panic!(
            "{what}: expected InvalidInput, got {:?}: {}",
            e.kind(),
            with_sources(&e)
        ),
        Ok(v) => panic!("{what}: expected InvalidInput, got Ok({v:?})"),
    }
}

/// Deletes every key.
fn clear<S: StateStore>(store: &S) {
    let keys = ok(store.list(""), "list all keys");
    let edits: Vec<StateEdit> = keys.into_iter().map(StateEdit::delete).collect();
    ok(store.apply(&edits), "delete every key");
    assert_eq!(
        ok(store.list(""), "list after clearing"),
        Vec::<String>::new(),
        "deleting every listed key must leave an empty store"
    );
}

/// Every key with its value.
fn snapshot<S: StateStore>(store: &S) -> BTreeMap<String, Vec<u8>> {
    ok(store.list(""), "list all keys")
        .into_iter()
        .map(|k| {
            let v = ok(store.read(&k), "read a listed key")
                .unwrap_or_else(|| panic!("listed key {k:?} must be readable"));
            (k, v)
        })
        .collect()
}

/// Keys that every store must refuse, with what is wrong with them.
pub fn invalid_keys() -> Vec<(String, &'static str)> {
    vec![
        (String::new(), "empty"),
        ("/abs".into(), "leading slash"),
        ("dir/".into(), "trailing slash"),
        ("a//b".into(), "empty segment"),
        (".".into(), "dot"),
        ("..".into(), "dot-dot"),
        ("a/../b".into(), "dot-dot segment"),
        ("../escape".into(), "leading dot-dot"),
        ("a/./b".into(), "dot segment"),
        ("nul\0byte".into(), "NUL"),
        ("new\nline".into(), "newline"),
        ("carriage\rreturn".into(), "carriage return"),
        ("tab\tkey".into(), "tab"),
        ("del\u{7f}".into(), "DEL control character"),
        ("back\\slash".into(), "backslash"),
        (".git/config".into(), ".git segment"),
        ("x/.GIT".into(), ".git segment in another case"),
        (".squad-lock".into(), "reserved prefix"),
        ("a".repeat(super::MAX_KEY_LEN + 1), "too long"),
        (
            format!("d/{}", "s".repeat(super::MAX_SEGMENT_LEN + 1)),
            "segment too long",
        ),
    ]
}

/// Invalid keys are refused by every method with [`ErrorKind::InvalidInput`] and change nothing;
/// keys with spaces and non-ASCII characters are accepted.
pub fn keys_are_validated<S: StateStore>(store: &S) {
    clear(store);
    ok(store.write("keep.md", b"keep\n"), "write keep.md");
    let before = snapshot(store);
    for (key, why) in invalid_keys() {
        let what = format!("key {key:?} ({why})");
        invalid(store.read(&key), &format!("read {what}"));
        invalid(store.write(&key, b"x"), &format!("write {what}"));
        invalid(store.append(&key, b"x"), &format!("append {what}"));
        invalid(store.delete(&key), &format!("delete {what}"));
        invalid(
            store.apply(&[StateEdit::write("ok.md", "x"), StateEdit::write(&key, "x")]),
            &format!("batch with {what}"),
        );
        assert_eq!(snapshot(store), before, "{what} must change nothing");
    }
    for prefix in ["../", "/", "a//b/", "x/../y", "tab\t", "a\\", ".git/"] {
        invalid(store.list(prefix), &format!("list prefix {prefix:?}"));
    }
    for key in [
        "with space.md",
        "research/2026-11-30 jwt.md",
        "ünïcødé/ключ",
        ".hidden",
        "a...b",
    ] {
        ok(
            store.write(key, key.as_bytes()),
            &format!("write valid key {key:?}"),
        );
        assert_eq!(
            ok(store.read(key), "read back").as_deref(),
            Some(key.as_bytes()),
            "valid key {key:?} must round-trip"
        );
    }
}

/// Reading a missing key is `Ok(None)`; listing an empty store is empty.
pub fn read_missing_is_none<S: StateStore>(store: &S) {
    clear(store);
    assert_eq!(ok(store.read("missing.md"), "read missing"), None);
    assert_eq!(
        ok(store.read("no/such/dir/key"), "read missing nested"),
        None
    );
    assert_eq!(ok(store.list(""), "list empty"), Vec::<String>::new());
    assert_eq!(
        ok(store.list("no/such/"), "list missing dir"),
        Vec::<String>::new()
    );
    assert!(!ok(store.contains("missing.md"), "contains missing"));
}

/// Values round-trip byte for byte, and a write replaces the whole value.
pub fn values_round_trip_byte_for_byte<S: StateStore>(store: &S) {
    clear(store);
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let values: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("trailing-newlines.md", b"line\n\n\n".to_vec()),
        ("crlf.txt", b"a\r\nb\r\n".to_vec()),
        ("nul.bin", b"\0\0x\0".to_vec()),
        ("not-utf8.bin", vec![0xff, 0xfe, 0x80, b'\n']),
        ("no-newline", b"no newline at end".to_vec()),
        ("big.bin", big),
    ];
    for (key, value) in &values {
        ok(store.write(key, value), &format!("write {key}"));
    }
    for (key, value) in &values {
        assert_eq!(
            ok(store.read(key), "read").as_ref(),
            Some(value),
            "{key} must round-trip byte for byte"
        );
    }
    ok(store.write("no-newline", b"short"), "overwrite");
    assert_eq!(
        ok(store.read("no-newline"), "read").as_deref(),
        Some(&b"short"[..]),
        "a write replaces the whole value"
    );
    assert!(
        ok(store.contains("empty"), "contains"),
        "an empty value is still a key"
    );
}

/// Appending to a missing key creates it; appends accumulate in order.
pub fn append_creates_and_extends<S: StateStore>(store: &S) {
    clear(store);
    ok(store.append("log/a", b"one\n"), "append to missing key");
    ok(store.append("log/a", b"two"), "append");
    ok(store.append("log/a", b""), "append nothing");
    ok(store.append("log/a", b"\nthree\n"), "append");
    assert_eq!(
        ok(store.read("log/a"), "read").as_deref(),
        Some(&b"one\ntwo\nthree\n"[..])
    );
    ok(
        store.append("log/empty", b""),
        "append nothing to a missing key",
    );
    assert_eq!(
        ok(store.read("log/empty"), "read").as_deref(),
        Some(&b""[..]),
        "appending nothing to a missing key creates an empty value"
    );
}

/// Deleting is idempotent: a missing key is not an error, and a deleted key reads as `None`.
pub fn delete_is_idempotent<S: StateStore>(store: &S) {
    clear(store);
    ok(store.delete("never-existed"), "delete a missing key");
    ok(store.write("gone.md", b"x"), "write");
    ok(store.delete("gone.md"), "delete");
    assert_eq!(ok(store.read("gone.md"), "read deleted"), None);
    ok(store.delete("gone.md"), "delete again");
    assert_eq!(ok(store.list(""), "list"), Vec::<String>::new());
}

/// Nested keys list under their directory, and directories emptied by deletes disappear (so
/// their name can then hold a value).
pub fn nested_keys_and_pruning<S: StateStore>(store: &S) {
    clear(store);
    for key in ["a/b/c", "a/b/d", "a/e", "z"] {
        ok(store.write(key, key.as_bytes()), "write nested");
    }
    assert_eq!(ok(store.list(""), "list"), ["a/b/c", "a/b/d", "a/e", "z"]);
    assert_eq!(
        ok(store.read("a/b"), "read a directory"),
        None,
        "a directory is not a value"
    );
    ok(store.delete("a/b"), "delete a directory name");
    assert_eq!(
        ok(store.list("a/"), "list"),
        ["a/b/c", "a/b/d", "a/e"],
        "deleting a directory name deletes nothing"
    );
    ok(store.delete("a/b/c"), "delete");
    ok(store.delete("a/b/d"), "delete");
    assert_eq!(ok(store.list(""), "list"), ["a/e", "z"]);
    ok(
        store.write("a/b", b"now a value"),
        "write where an emptied directory was",
    );
    assert_eq!(
        ok(store.read("a/b"), "read").as_deref(),
        Some(&b"now a value"[..])
    );
    ok(store.delete("a/b"), "delete");
    ok(store.delete("a/e"), "delete");
    ok(
        store.write("a", b"a value"),
        "write where an emptied directory was",
    );
    assert_eq!(ok(store.list(""), "list"), ["a", "z"]);
}

/// A key is a value or a directory, never both; a refused write changes nothing.
pub fn values_and_directories_do_not_mix<S: StateStore>(store: &S) {
    clear(store);
    ok(store.write("file", b"v"), "write");
    ok(store.write("dir/child", b"c"), "write");
    let before = snapshot(store);
    invalid(store.write("file/below", b"x"), "write below a value");
    invalid(
        store.append("file/below/deeper", b"x"),
        "append below a value",
    );
    invalid(store.write("dir", b"x"), "write over a directory");
    invalid(store.append("dir", b"x"), "append over a directory");
    assert_eq!(snapshot(store), before, "refused writes change nothing");
    // Within one batch, a directory emptied earlier can become a value.
    ok(
        store.apply(&[
            StateEdit::delete("dir/child"),
            StateEdit::write("dir", "now a value"),
        ]),
        "delete the last child, then write the directory name",
    );
    assert_eq!(ok(store.list(""), "list"), ["dir", "file"]);
}

/// `list(prefix)` is a plain string prefix over keys, sorted by bytes.
pub fn list_is_sorted_by_prefix<S: StateStore>(store: &S) {
    clear(store);
    let keys = [
        "researchers.md",
        "research/b.md",
        "research/a.md",
        "decisions.md",
        "research/deep/z.md",
        "Z-upper.md",
        "ledger/promoted",
    ];
    for key in keys {
        ok(store.write(key, b"x"), "write");
    }
    let mut sorted: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
    sorted.sort();
    assert_eq!(ok(store.list(""), "list all"), sorted);
    assert_eq!(
        ok(store.list("research/"), "list dir"),
        ["research/a.md", "research/b.md", "research/deep/z.md"]
    );
    assert_eq!(
        ok(store.list("research"), "list string prefix"),
        [
            "research/a.md",
            "research/b.md",
            "research/deep/z.md",
            "researchers.md"
        ]
    );
    assert_eq!(ok(store.list("dec"), "list partial name"), ["decisions.md"]);
    assert_eq!(
        ok(store.list("research/deep/z.md"), "list exact key"),
        ["research/deep/z.md"]
    );
    assert_eq!(
        ok(store.list("nothing"), "list no match"),
        Vec::<String>::new()
    );
}

/// A [`StateEdit::Expect`] that does not hold fails the whole batch with `Conflict`; one that
/// holds (including "missing" for a missing key, and a value set earlier in the same batch)
/// lets it apply.
pub fn expectations_guard_the_batch<S: StateStore>(store: &S) {
    clear(store);
    ok(store.write("ledger", b"a\n"), "write");
    let before = snapshot(store);
    match store.apply(&[
        StateEdit::append("ledger", "b\n"),
        StateEdit::write("other", "x"),
        StateEdit::expect("ledger", Some("stale\n")),
    ]) {
        Err(e) => assert_eq!(e.kind(), crate::ErrorKind::Conflict, "a failed Expect: {e}"),
        Ok(()) => panic!("a batch with a failed Expect was applied"),
    }
    assert_eq!(snapshot(store), before, "a failed Expect changes nothing");
    ok(
        store.apply(&[
            StateEdit::expect("ledger", Some("a\n")),
            StateEdit::expect("missing", None::<Vec<u8>>),
            StateEdit::append("ledger", "b\n"),
            StateEdit::expect("ledger", Some("a\nb\n")),
        ]),
        "a batch whose Expects hold",
    );
    assert_eq!(
        ok(store.read("ledger"), "read").as_deref(),
        Some(&b"a\nb\n"[..])
    );
    ok(
        store.apply(&[StateEdit::expect("ledger", Some("a\nb\n"))]),
        "a batch of Expects only",
    );
    clear(store);
}

/// A batch applies in order and entirely, or not at all.
pub fn batches_are_atomic<S: StateStore>(store: &S) {
    clear(store);
    ok(store.write("c", b"to delete"), "write");
    ok(
        store.apply(&[
            StateEdit::write("a", "1"),
            StateEdit::append("a", "2"),
            StateEdit::append("b/log", "x\n"),
            StateEdit::delete("c"),
        ]),
        "apply a batch",
    );
    assert_eq!(
        ok(store.read("a"), "read").as_deref(),
        Some(&b"12"[..]),
        "edits apply in order"
    );
    assert_eq!(
        ok(store.read("b/log"), "read").as_deref(),
        Some(&b"x\n"[..])
    );
    assert_eq!(ok(store.read("c"), "read"), None);
    let before = snapshot(store);
    invalid(
        store.apply(&[
            StateEdit::append("a", "3"),
            StateEdit::write("new", "n"),
            StateEdit::write("a/below", "conflict"),
        ]),
        "a batch whose last edit conflicts",
    );
    assert_eq!(snapshot(store), before, "a refused batch changes nothing");
    ok(store.apply(&[]), "an empty batch");
    ok(
        store.apply(&[StateEdit::write("t", "v"), StateEdit::delete("t")]),
        "write then delete",
    );
    assert_eq!(
        snapshot(store),
        before,
        "write then delete in one batch is no change"
    );
}

/// [`APPEND_THREADS`] threads append [`APPENDS_PER_THREAD`] lines each to one key through the
/// same store; every line lands exactly once, and each thread's lines keep their order.
pub fn concurrent_appends_lose_nothing<S: StateStore>(store: &S) {
    clear(store);
    concurrent_appends_from(|| store);
}

/// Like [`concurrent_appends_lose_nothing`], but each thread uses its own store from `make`
/// (for example a second handle on the same repository or directory). The stores must share
/// their data and start empty.
pub fn concurrent_appends_from<S: StateStore, F: Fn() -> S + Sync>(make: F) {
    const KEY: &str = "log/appends.md";
    std::thread::scope(|scope| {
        for t in 0..APPEND_THREADS {
            let make = &make;
            scope.spawn(move || {
                let store = make();
                for i in 0..APPENDS_PER_THREAD {
                    let line = format!("thread {t} append {i}\n");
                    ok(store.append(KEY, line.as_bytes()), "concurrent append");
                }
            });
        }
    });
    let store = make();
    let bytes = ok(store.read(KEY), "read appended key").unwrap_or_default();
    let text = String::from_utf8(bytes).unwrap_or_else(|e| panic!("appends mixed bytes: {e}"));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        APPEND_THREADS * APPENDS_PER_THREAD,
        "every append must land exactly once"
    );
    for t in 0..APPEND_THREADS {
        let mine: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| l.starts_with(&format!("thread {t} ")))
            .collect();
        let expected: Vec<String> = (0..APPENDS_PER_THREAD)
            .map(|i| format!("thread {t} append {i}"))
            .collect();
        assert_eq!(
            mine, expected,
            "thread {t}'s appends must all land, in order"
        );
    }
}

#[derive(Debug, Clone)]
enum Op {
    Batch(Vec<StateEdit>),
    List(String),
}

fn key_strategy() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "a/x", "a/y", "c/d", "c/d/e", "c/f g"])
        .prop_map(str::to_owned)
}

fn edit_strategy() -> impl Strategy<Value = StateEdit> {
    let bytes = prop::collection::vec(any::<u8>(), 0..6);
    prop_oneof![
        (key_strategy(), bytes.clone()).prop_map(|(k, v)| StateEdit::write(k, v)),
        (key_strategy(), bytes).prop_map(|(k, v)| StateEdit::append(k, v)),
        key_strategy().prop_map(StateEdit::delete),
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop::collection::vec(edit_strategy(), 1..4).prop_map(Op::Batch),
        1 => prop::sample::select(vec!["", "a", "a/", "c/", "c/d", "b"])
            .prop_map(|p| Op::List(p.to_owned())),
    ]
}

/// The model: a map with the same rules, written independently of the stores' shared planner.
fn model_apply(model: &mut BTreeMap<String, Vec<u8>>, edits: &[StateEdit]) -> bool {
    let mut next = model.clone();
    for edit in edits {
        let key = edit.key();
        let storable = |m: &BTreeMap<String, Vec<u8>>| {
            let ancestor_is_value = key
                .match_indices('/')
                .any(|(i, _)| m.contains_key(&key[..i]));
            let is_dir = m.keys().any(|k| k.starts_with(&format!("{key}/")));
            !ancestor_is_value && !is_dir
        };
        match edit {
            StateEdit::Write { value, .. } => {
                if !storable(&next) {
                    return false;
                }
                next.insert(key.to_owned(), value.clone());
            }
            StateEdit::Append { bytes, .. } => {
                if !storable(&next) {
                    return false;
                }
                next.entry(key.to_owned())
                    .or_default()
                    .extend_from_slice(bytes);
            }
            StateEdit::Delete { .. } => {
                next.remove(key);
            }
            StateEdit::Expect { value, .. } => {
                if next.get(key) != value.as_ref() {
                    return false;
                }
            }
        }
    }
    *model = next;
    true
}

/// A proptest model test: random sequences of batches and listings compared with a `BTreeMap`
/// oracle after every step (`cases` sequences of up to 12 operations).
pub fn matches_model<S: StateStore>(store: &S, cases: u32) {
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = prop::collection::vec(op_strategy(), 1..12);
    let result = runner.run(&strategy, |ops| {
        clear(store);
        let mut model: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        for op in &ops {
            match op {
                Op::Batch(edits) => {
                    let accepted = model_apply(&mut model, edits);
                    match store.apply(edits) {
                        Ok(()) if accepted => {}
                        Err(e) if !accepted && e.kind() == ErrorKind::InvalidInput => {}
                        other => {
                            return Err(TestCaseError::fail(format!(
                                "apply {edits:?}: model accepted={accepted}, store gave {other:?}"
                            )));
                        }
                    }
                }
                Op::List(prefix) => {
                    let expected: Vec<String> = model
                        .keys()
                        .filter(|k| k.starts_with(prefix.as_str()))
                        .cloned()
                        .collect();
                    let got = store.list(prefix).map_err(|e| {
                        TestCaseError::fail(format!("list {prefix:?}: {}", with_sources(&e)))
                    })?;
                    prop_assert_eq!(got, expected, "list {:?}", prefix);
                }
            }
            prop_assert_eq!(&snapshot(store), &model, "after {:?}", op);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("the store disagrees with the BTreeMap model: {e}");
    }
}

/// Runs every scenario against `store` (deleting all of its keys first).
pub fn run_all<S: StateStore>(store: &S) {
    keys_are_validated(store);
    read_missing_is_none(store);
    values_round_trip_byte_for_byte(store);
    append_creates_and_extends(store);
    delete_is_idempotent(store);
    nested_keys_and_pruning(store);
    values_and_directories_do_not_mix(store);
    list_is_sorted_by_prefix(store);
    batches_are_atomic(store);
    expectations_guard_the_batch(store);
    concurrent_appends_lose_nothing(store);
    matches_model(store, 24);
    clear(store);
}
