//! `read_all` on the gix backend reads blobs straight from the packs, in pack order. These tests
//! check it against git (`git notes list` + `git cat-file --batch`) and against one `read` per
//! object, on every layout git produces: one fast-import pack, a repack with offset deltas, a
//! repack with deltas by id (`REF_DELTA`), loose objects beside a pack, and several packs. The
//! namespaces are large enough (over 512 blobs) for the read to run on several threads.

use std::collections::BTreeMap;

use squad_notes::{NotesBackend, NotesRef, Oid};

use crate::common::Repo;

const NOTES: usize = 1_200;

/// A history of `NOTES` commits and a note on each, written by `git fast-import`. Notes are
/// similar JSON lines (so packs delta them against each other); the first ten are byte-identical
/// (one blob noted on ten commits); one note is empty.
fn fixture() -> Repo {
    history_with_notes((1..=NOTES).map(|i| {
        let body = match i {
            1..=10 => "{\"id\":\"same\",\"type\":\"progress\"}\n".to_owned(),
            11 => String::new(),
            _ => format!(
                "{{\"id\":\"01ARZ3NDEKTSV4RRFFQ69G{i:04}\",\"agent\":\"data\",\"type\":\"decision\",\"decision\":\"Use JWT RS256 for auth middleware, step {i}\",\"reasoning\":\"Existing pattern in codebase.\"}}\n"
            ),
        };
        (i, body)
    }))
}

/// A history of `NOTES` commits and one notes commit holding `notes`: (commit number from 1,
/// note text), written by `git fast-import`.
fn history_with_notes(notes: impl Iterator<Item = (usize, String)>) -> Repo {
    let repo = Repo::new();
    let mut s = String::new();
    for i in 1..=NOTES {
        s.push_str(&format!(
            "commit refs/heads/main\nmark :{i}\ncommitter T <t@test.invalid> {} +0000\ndata 0\n\n",
            1_700_000_000 + i
        ));
    }
    s.push_str(
        "commit refs/notes/squad/data\ncommitter T <t@test.invalid> 1700000000 +0000\ndata 8\nfixture\n",
    );
    for (i, body) in notes {
        s.push_str(&format!("N inline :{i}\ndata {}\n{body}\n", body.len()));
    }
    repo.git_stdin(&["fast-import", "--quiet"], s.as_bytes());
    repo
}

/// Every (object, note bytes) as git prints them.
fn git_notes(repo: &Repo) -> BTreeMap<Oid, Vec<u8>> {
    let list = repo.git_ok(&["notes", "--ref=squad/data", "list"]);
    let pairs: Vec<(&str, &str)> = list.lines().map(|l| l.split_once(' ').unwrap()).collect();
    let input: String = pairs.iter().map(|(blob, _)| format!("{blob}\n")).collect();
    let out = repo.git_stdin_bytes(&["cat-file", "--batch"], input.as_bytes());
    let mut rest = out.as_slice();
    let mut map = BTreeMap::new();
    for (_, object) in &pairs {
        let nl = rest.iter().position(|&b| b == b'\n').unwrap();
        let header = std::str::from_utf8(&rest[..nl]).unwrap();
        let size: usize = header.rsplit(' ').next().unwrap().parse().unwrap();
        let body = rest[nl + 1..nl + 1 + size].to_vec();
        rest = &rest[nl + 1 + size + 1..];
        map.insert(object.parse().unwrap(), body);
    }
    map
}

#[track_caller]
fn check(repo: &Repo, layout: &str) {
    let (backend, tip) = data_tip(repo);
    let all = backend.read_all(&tip).unwrap();
    let ours: BTreeMap<Oid, Vec<u8>> = all.iter().cloned().collect();
    assert_eq!(ours.len(), all.len(), "{layout}: duplicate objects");
    assert!(
        all.windows(2).all(|w| w[0].0 < w[1].0),
        "{layout}: not sorted by object"
    );
    let git = git_notes(repo);
    assert_eq!(ours.len(), git.len(), "{layout}: note count");
    assert_eq!(ours, git, "{layout}: bytes differ from git's");
    let parsed = backend.read_all_parsed(&tip).unwrap();
    assert_eq!(parsed.len(), all.len(), "{layout}: parsed count");
    for ((o1, note), (o2, bytes)) in parsed.iter().zip(&all) {
        assert_eq!(o1, o2, "{layout}: parsed order");
        assert_eq!(
            note,
            &squad_notes::format::parse_note(bytes),
            "{layout}: {o1} parsed where decoded"
        );
    }
    for (object, bytes) in &all {
        assert_eq!(
            backend.read(&tip, object).unwrap().as_ref(),
            Some(bytes),
            "{layout}: read_all and read disagree on {object}"
        );
    }
    check_stream(&backend, &tip, &all, layout);
}

/// `stream_map` gives what `read_all` gives, in batches of one first byte each, in order;
/// with a delta cache too small to hold anything (every chain decoded from its base) and with
/// one that holds everything.
#[track_caller]
pub(crate) fn check_stream(
    backend: &squad_notes::GixNotes,
    tip: &Oid,
    all: &[(Oid, Vec<u8>)],
    layout: &str,
) {
    for cache in [1, 64 << 20] {
        let mut streamed = Vec::new();
        let mut batches = 0;
        backend
            .stream_map(tip, cache, <[u8]>::to_vec, |batch| {
                let first = &batch[0].0.as_str()[..2];
                assert!(
                    batch.iter().all(|(o, _)| &o.as_str()[..2] == first),
                    "{layout}: a batch mixes first bytes"
                );
                batches += 1;
                streamed.extend(batch);
                Ok(())
            })
            .unwrap();
        assert_eq!(batches == 0, all.is_empty(), "{layout}: {batches} batches");
        assert_eq!(
            streamed, all,
            "{layout}, cache {cache}: streamed differs from read_all"
        );
    }
    check_windows(backend, tip, all, layout);
    if all.is_empty() {
        return;
    }
    // An error of the sink stops the walk and comes back as it is.
    assert_stopped(backend.stream_map(tip, 1 << 20, <[u8]>::len, stop_here));
}

/// A sink that stops a walk at its first batch, with an error [`assert_stopped`] recognises.
fn stop_here<T>(_: T) -> squad_notes::Result<()> {
    Err(squad_notes::Error::new(
        squad_notes::ErrorKind::Backend,
        "test",
        "stop here",
    ))
}

/// That a walk fed to [`stop_here`] stopped with its error, as it is.
#[track_caller]
fn assert_stopped(walk: squad_notes::Result<()>) {
    let err = walk.unwrap_err();
    assert!(err.to_string().contains("stop here"), "{err}");
}

/// `stream_windows` gives what `read_all` gives, in order, in batches of at most 4096 notes:
/// as few as that allows when one window holds every note (read from a plan of the delta
/// trees), more when the window is small (windows of half as many notes sweeping the pack, down
/// to a window of one note, whose every blob is decoded from its chain's root).
/// `stream_windows_typed` gives the same with each object's type as `object_types` gives it.
#[track_caller]
fn check_windows(backend: &squad_notes::GixNotes, tip: &Oid, all: &[(Oid, Vec<u8>)], layout: &str) {
    let objects: Vec<Oid> = all.iter().map(|(o, _)| o.clone()).collect();
    let types = backend.object_types(&objects).unwrap();
    let typed_all: Vec<_> = all
        .iter()
        .zip(&types)
        .map(|((o, v), t)| (o.clone(), v.clone(), *t))
        .collect();
    for window in [1, 100, all.len().max(1), 1 << 17] {
        let mut streamed: Vec<(Oid, Vec<u8>)> = Vec::new();
        let mut windows = 0;
        backend
            .stream_windows(tip, window, <[u8]>::to_vec, |part| {
                assert!(!part.is_empty(), "{layout}: an empty batch");
                assert!(part.len() <= 4096, "{layout}: a batch of {}", part.len());
                windows += 1;
                streamed.extend(part);
                Ok(())
            })
            .unwrap();
        assert_eq!(
            streamed, all,
            "{layout}, window {window}: streamed differs from read_all"
        );
        // A window counts tree entries, which mixed fanouts make more than the notes.
        if window > 2 * all.len() {
            assert_eq!(windows, all.len().div_ceil(4096), "{layout}: one window");
        } else if window == 1 && all.len() > 1_000 {
            assert!(windows > 1, "{layout}: {windows} windows of 1");
        }
        let mut typed = Vec::new();
        backend
            .stream_windows_typed(tip, window, <[u8]>::to_vec, |part| {
                assert!(
                    !part.is_empty() && part.len() <= 4096,
                    "{layout}: typed batch"
                );
                typed.extend(part);
                Ok(())
            })
            .unwrap();
        assert_eq!(
            typed, typed_all,
            "{layout}, window {window}: typed stream differs from read_all and object_types"
        );
    }
    if all.is_empty() {
        return;
    }
    assert_stopped(backend.stream_windows(tip, 1, <[u8]>::len, stop_here));
    assert_stopped(backend.stream_windows_typed(tip, 1, <[u8]>::len, stop_here));
}

fn count(repo: &Repo, key: &str) -> usize {
    repo.git_ok(&["count-objects", "-v"])
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn read_all_matches_git_on_a_fast_import_pack() {
    let repo = fixture();
    assert_eq!(count(&repo, "packs:"), 1);
    check(&repo, "fast-import pack");
}

#[test]
fn read_all_matches_git_with_offset_deltas() {
    let repo = fixture();
    repo.git_ok(&["repack", "-adfq", "--depth=50", "--window=50"]);
    let verify = repo.git_ok(&["verify-pack", "-s", &pack_idx(&repo)]);
    assert!(
        verify.contains("chain length = 2"),
        "the fixture should hold delta chains: {verify}"
    );
    check(&repo, "offset deltas");
}

#[test]
fn read_all_matches_git_with_deltas_by_id() {
    let repo = fixture();
    repo.git_ok(&[
        "-c",
        "repack.useDeltaBaseOffset=false",
        "repack",
        "-adfq",
        "--depth=10",
    ]);
    check(&repo, "ref deltas");
}

#[test]
fn read_all_matches_git_with_loose_notes_beside_a_pack_and_with_two_packs() {
    let repo = fixture();
    repo.git_ok(&["repack", "-adq"]);
    // Every tenth of the newest 600 notes rewritten by git itself: loose blobs and trees.
    let commits = repo.git_ok(&["rev-list", "--max-count=600", "main"]);
    for (i, c) in commits.lines().enumerate().filter(|(i, _)| i % 10 == 0) {
        let note = format!("{{\"id\":\"loose-{i}\",\"type\":\"progress\"}}");
        repo.git_ok(&["notes", "--ref=squad/data", "add", "-f", "-m", &note, c]);
    }
    assert!(count(&repo, "count:") > 0, "loose objects expected");
    check(&repo, "loose beside a pack");
    // An incremental repack: the new objects in a second pack.
    repo.git_ok(&["repack", "-dq"]);
    assert_eq!(count(&repo, "packs:"), 2);
    check(&repo, "two packs");
}

/// A second notes commit shortens every other note, and a full repack makes the new, shorter
/// notes deltas of their old, longer versions (git prefers larger bases). Those old blobs are
/// in no note of the tip: the read must decode them as bases without returning them.
#[test]
fn read_all_matches_git_when_bases_are_old_note_versions() {
    let repo = fixture();
    let list = repo.git_ok(&["notes", "--ref=squad/data", "list"]);
    let mut s = String::from(
        "commit refs/notes/squad/data\ncommitter T <t@test.invalid> 1700000001 +0000\ndata 7\nshorter\nfrom refs/notes/squad/data^0\n",
    );
    for (i, line) in list.lines().enumerate().filter(|(i, _)| i % 2 == 0) {
        let (_, object) = line.split_once(' ').unwrap();
        let body = format!(
            "{{\"id\":\"01ARZ3NDEKTSV4RRFFQ69H{i:04}\",\"agent\":\"data\",\"type\":\"decision\",\"decision\":\"Use JWT RS256 for auth middleware, step {i}\"}}\n"
        );
        s.push_str(&format!("N inline {object}\ndata {}\n{body}\n", body.len()));
    }
    repo.git_stdin(&["fast-import", "--quiet"], s.as_bytes());
    repo.git_ok(&["repack", "-adfq", "--depth=50", "--window=50"]);
    // At least one note blob of the tip is a delta whose base is no note of the tip.
    let noted: std::collections::HashSet<String> = repo
        .git_ok(&["notes", "--ref=squad/data", "list"])
        .lines()
        .map(|l| l.split_once(' ').unwrap().0.to_owned())
        .collect();
    let verify = repo.git_ok(&["verify-pack", "-v", &pack_idx(&repo)]);
    let hidden_bases = verify
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() == 7 && f[1] == "blob" && noted.contains(f[0]))
        .filter(|f| !noted.contains(f[6]))
        .count();
    assert!(
        hidden_bases > 0,
        "the layout should hold such bases:\n{verify}"
    );
    check(&repo, "bases that are old versions");
}

/// A small namespace in a large pack: its blobs are looked up one by one rather than found by
/// one pass over the pack index (the read picks the pass only when the blobs are a large share
/// of the pack's objects).
#[test]
fn read_all_matches_git_for_a_few_notes_in_a_large_pack() {
    let repo = history_with_notes((60..=NOTES).step_by(60).map(|i| {
        let body = format!("{{\"id\":\"01ARZ3NDEKTSV4RRFFQ69G{i:04}\",\"type\":\"progress\"}}\n");
        (i, body)
    }));
    repo.git_ok(&["repack", "-adfq"]);
    // 20 notes among about 1,200 commits: fewer than one in eight objects.
    assert!(count(&repo, "in-pack:") > 20 * 8, "a large pack");
    check(&repo, "a few notes in a large pack");
}

/// A repository that borrows its objects from another one (`objects/info/alternates`, as
/// `git clone --shared` sets up): the notes trees and blobs are in no pack of its own, so the
/// read goes through the object database for them; notes added here are in a local pack.
#[test]
fn read_all_matches_git_with_objects_in_an_alternate() {
    let src = fixture();
    src.git_ok(&["repack", "-adq"]);
    let repo = Repo::new();
    let alternates = repo.path().join(".git/objects/info/alternates");
    let objects = src.path().join(".git/objects");
    std::fs::write(&alternates, format!("{}\n", objects.display())).unwrap();
    for r in ["refs/heads/main", "refs/notes/squad/data"] {
        let tip = src.git_ok(&["rev-parse", r]);
        repo.git_ok(&["update-ref", r, tip.trim()]);
    }
    check(&repo, "all objects in an alternate");
    let commits = repo.git_ok(&["rev-list", "--max-count=40", "main"]);
    for (i, c) in commits.lines().enumerate() {
        let note = format!("{{\"id\":\"local-{i}\",\"type\":\"progress\"}}");
        repo.git_ok(&["notes", "--ref=squad/data", "add", "-f", "-m", &note, c]);
    }
    repo.git_ok(&["repack", "-adlq"]);
    assert_eq!(count(&repo, "packs:"), 1, "a local pack of the new objects");
    check(&repo, "an alternate and a local pack");
}

#[test]
fn a_note_entry_that_is_a_tree_in_a_pack_is_a_corrupt_error() {
    let repo = Repo::new();
    let commit = repo.commit("one");
    let blob = repo.git_stdin(&["hash-object", "-w", "--stdin"], b"hi\n");
    let inner = repo.git_stdin(
        &["mktree"],
        format!("100644 blob {}\tx\n", blob.trim()).as_bytes(),
    );
    // A notes tree whose entry for `commit` has a blob's mode but names a tree: `git mktree`
    // refuses to write that, so the tree is written raw.
    let mut raw = format!("100644 {commit}\0").into_bytes();
    raw.extend(hex_to_bytes(inner.trim()));
    let tree = repo.git_stdin(
        &["hash-object", "-t", "tree", "-w", "--literally", "--stdin"],
        &raw,
    );
    let notes_commit = repo.git_ok(&["commit-tree", "-m", "notes", tree.trim()]);
    repo.git_ok(&["update-ref", "refs/notes/squad/data", notes_commit.trim()]);
    repo.git_ok(&["repack", "-adq"]);
    let (backend, tip) = data_tip(&repo);
    let err = backend.read_all(&tip).unwrap_err();
    assert_eq!(err.kind(), squad_notes::ErrorKind::Corrupt, "{err}");
    assert!(err.to_string().contains("not a blob"), "{err}");
}

/// A gix backend on `repo` and the tip of `refs/notes/squad/data`.
fn data_tip(repo: &Repo) -> (squad_notes::GixNotes, Oid) {
    let backend = repo.backend();
    let tip = backend
        .tip(&NotesRef::new("refs/notes/squad/data").unwrap())
        .unwrap()
        .unwrap();
    (backend, tip)
}

fn pack_idx(repo: &Repo) -> String {
    let dir = repo.path().join(".git/objects/pack");
    let idx = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "idx"))
        .unwrap();
    idx.to_string_lossy().into_owned()
}

fn hex_to_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}
