//! Sync between clones: a bare repository as the remote, real clones, the git-CLI transport,
//! the gix backend, and `git notes` itself as a second writer.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use squad_model::NoteEntry;
use squad_notes::format::parse_note;
use squad_notes::sync::{MergeAction, SyncOptions, merge_remote, sync, sync_with};
use squad_notes::transport::{
    FetchRefspec, GitCliTransport, PushResult, PushUpdate, TrackingRef, Transport,
};
use squad_notes::{
    ErrorKind, Git2Notes, GixNotes, InMemoryNotes, NoteEdit, Notes, NotesBackend, NotesRef, Oid,
    RetryPolicy,
};

use crate::common::{agent, entry};
use crate::state_git::{configure, git, git_output, repo_with_commit};

pub(crate) struct World {
    _dir: tempfile::TempDir,
    pub(crate) remote: PathBuf,
    pub(crate) clones: Vec<PathBuf>,
    /// Commits on `main`, shared by every clone.
    pub(crate) commits: Vec<Oid>,
}

/// A bare remote with three commits on `main`, and `n` clones set up for notes sync.
pub(crate) fn world(n: usize) -> World {
    let dir = tempfile::tempdir().unwrap();
    let remote = dir.path().join("remote.git");
    let remote_str = remote.to_str().unwrap();
    git(
        dir.path(),
        &["init", "-q", "--bare", "-b", "main", remote_str],
    );
    let seed = repo_with_commit(&dir.path().join("seed"));
    for i in 0..2 {
        git(
            &seed,
            &["commit", "-q", "--allow-empty", "-m", &format!("c{i}")],
        );
    }
    git(&seed, &["push", "-q", remote_str, "main"]);
    let commits = git(&seed, &["rev-list", "main"])
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    let clones = (0..n)
        .map(|i| {
            let path = dir.path().join(format!("clone{i}"));
            git(
                dir.path(),
                &["clone", "-q", remote_str, path.to_str().unwrap()],
            );
            configure(&path);
            transport(&path).setup("origin").unwrap();
            path
        })
        .collect();
    World {
        _dir: dir,
        remote,
        clones,
        commits,
    }
}

/// The transport, isolated from the machine's git configuration.
pub(crate) fn transport(repo: &Path) -> GitCliTransport {
    GitCliTransport::new(repo)
        .with_env("GIT_CONFIG_NOSYSTEM", "1")
        .with_env("GIT_CONFIG_GLOBAL", "/dev/null")
}

fn backend(repo: &Path) -> GixNotes {
    GixNotes::open(repo).unwrap()
}

/// Every (namespace ref, annotated object, entry id) in the squad refs of `repo`, and the lines
/// that are not entries.
fn holdings(repo: &Path) -> (BTreeSet<(String, Oid, String)>, BTreeSet<String>) {
    let b = backend(repo);
    let mut ids = BTreeSet::new();
    let mut other = BTreeSet::new();
    for (name, tip) in b.list_refs("refs/notes/squad/").unwrap() {
        for (object, bytes) in b.read_all(&tip).unwrap() {
            let note = parse_note(&bytes);
            for e in note.entries {
                ids.insert((name.to_string(), object.clone(), e.id.to_string()));
            }
            other.extend(note.unparsed.into_iter().map(|u| u.text));
        }
    }
    (ids, other)
}

/// Appends `entry` as one JSON line with `git notes append` (git's own writer).
fn git_append(repo: &Path, ns: &str, commit: &Oid, line: &str) {
    git(
        repo,
        &[
            "notes",
            &format!("--ref=squad/{ns}"),
            "append",
            "-m",
            line.trim_end(),
            commit.as_str(),
        ],
    );
}

fn key(ns: &str, commit: &Oid, e: &NoteEntry) -> (String, Oid, String) {
    (
        format!("refs/notes/squad/{ns}"),
        commit.clone(),
        e.id.to_string(),
    )
}

#[track_caller]
fn assert_plain_git_works(repo: &Path) {
    for args in [&["fetch"][..], &["pull", "--no-rebase"][..]] {
        let out = git_output(repo, args);
        assert!(
            out.status.success(),
            "git {args:?} in {} failed: {}",
            repo.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let fsck = git_output(
        repo,
        &["fsck", "--strict", "--no-progress", "--no-dangling"],
    );
    assert!(
        fsck.status.success(),
        "git fsck: {}",
        String::from_utf8_lossy(&fsck.stderr)
    );
}

/// The acceptance test of issue 4: three clones writing concurrently (the library on gix and on
/// git2, and `git notes`)
/// to the same and to different namespaces and commits, syncing concurrently and then in
/// sequential rounds: every clone ends up with every entry, and plain `git fetch` / `git pull`
/// still work everywhere.
#[test]
fn three_clones_writing_concurrently_converge_without_loss() {
    let w = world(3);
    let shared = agent("data");
    let written: std::sync::Mutex<BTreeSet<(String, Oid, String)>> = Default::default();
    let texts = ["hand-written remark in clone2".to_owned()];
    std::thread::scope(|s| {
        for (i, clone) in w.clones.iter().enumerate() {
            let (w, shared, written, texts) = (&w, &shared, &written, &texts);
            s.spawn(move || {
                // clone1 writes and syncs through the libgit2 backend, the others through gix.
                let store: Box<dyn NotesBackend> = if i == 1 {
                    Box::new(Git2Notes::open(clone).unwrap())
                } else {
                    Box::new(backend(clone))
                };
                let notes = Notes::new(store);
                let own = agent(&format!("agent{i}"));
                let research = agent("research");
                for round in 0..6 {
                    let commit = &w.commits[round % w.commits.len()];
                    let mut mine = Vec::new();
                    if i == 2 {
                        // git's own writer: never run concurrently with a sync in this clone,
                        // since `git notes` updates refs without compare-and-swap.
                        let e = entry("data", &format!("git append {round}"));
                        git_append(clone, "data", commit, &e.to_line());
                        mine.push(key("data", commit, &e));
                        if round == 0 {
                            git_append(clone, "data", commit, &texts[0]);
                        }
                    } else {
                        let e = entry("data", &format!("clone{i} shared {round}"));
                        notes.write(shared, commit, &e).unwrap();
                        mine.push(key("data", commit, &e));
                    }
                    let e = entry(own.as_str(), &format!("clone{i} own {round}"));
                    notes.write(&own, commit, &e).unwrap();
                    mine.push(key(own.as_str(), commit, &e));
                    let e = entry(own.as_str(), &format!("clone{i} research {round}"));
                    notes.write(&research, &w.commits[0], &e).unwrap();
                    mine.push(key("research", &w.commits[0], &e));
                    written.lock().unwrap().extend(mine);
                    if round % 2 == 1 {
                        sync(notes.backend(), &transport(clone), "origin").unwrap();
                    }
                }
            });
        }
        // A library writer racing the syncs of clone0 on the same namespace and commits.
        let clone0 = &w.clones[0];
        let (w, written) = (&w, &written);
        s.spawn(move || {
            let notes = Notes::new(backend(clone0));
            for round in 0..10 {
                let commit = &w.commits[round % w.commits.len()];
                let e = entry("data", &format!("racer {round}"));
                notes.write(&agent("data"), commit, &e).unwrap();
                written.lock().unwrap().insert(key("data", commit, &e));
            }
        });
    });
    // A concurrent round: every clone syncs at once.
    std::thread::scope(|s| {
        for clone in &w.clones {
            s.spawn(move || sync(&backend(clone), &transport(clone), "origin").unwrap());
        }
    });
    // Sequential rounds: after the first every entry is on the remote, after the second in
    // every clone.
    for _ in 0..2 {
        for clone in &w.clones {
            sync(&backend(clone), &transport(clone), "origin").unwrap();
        }
    }
    let written = written.into_inner().unwrap();
    assert_eq!(written.len(), 3 * 6 * 3 + 10);
    for clone in &w.clones {
        let (ids, other) = holdings(clone);
        assert_eq!(ids, written, "{} holds every entry", clone.display());
        assert!(other.contains(&texts[0]), "the non-entry line is kept");
        assert_plain_git_works(clone);
    }
    // The remote holds the same refs at the same tips as every clone.
    let tips = backend(&w.clones[0])
        .list_refs("refs/notes/squad/")
        .unwrap();
    assert_eq!(tips.len(), 5, "data, research, agent0..2");
    for clone in &w.clones[1..] {
        assert_eq!(backend(clone).list_refs("refs/notes/squad/").unwrap(), tips);
    }
    let remote = backend(&w.remote).list_refs("refs/notes/").unwrap();
    assert_eq!(
        remote, tips,
        "the remote holds the clones' tips and no tracking refs"
    );
}

/// Two clones diverge on the same note; after the merge, git's own `cat_sort_uniq` merge of the
/// tracking ref is a no-op, `git notes show` reads every entry, and the merge commit has the
/// local tip then the remote tip as parents.
#[test]
fn merge_is_accepted_by_git_notes_merge_cat_sort_uniq() {
    let w = world(2);
    let (a, b) = (&w.clones[0], &w.clones[1]);
    let commit = &w.commits[0];
    let data = agent("data");
    let ea = entry("data", "from a");
    let eb = entry("data", "from b");
    let eg = entry("data", "git in b");
    Notes::new(backend(a)).write(&data, commit, &ea).unwrap();
    Notes::new(backend(b)).write(&data, commit, &eb).unwrap();
    git_append(b, "data", commit, &eg.to_line());
    git_append(b, "data", commit, "not json at all");
    let ra = sync(&backend(a), &transport(a), "origin").unwrap();
    assert_eq!((ra.fetched, ra.merged, ra.pushed), (0, 0, 1));
    let local_before = git(b, &["rev-parse", "refs/notes/squad/data"]);
    let rb = sync(&backend(b), &transport(b), "origin").unwrap();
    assert_eq!((rb.fetched, rb.merged, rb.pushed), (1, 1, 1));
    let tip = git(b, &["rev-parse", "refs/notes/squad/data"]);
    let remote_tip = git(b, &["rev-parse", "refs/notes/remotes/origin/squad/data"]);
    assert_eq!(
        git(b, &["rev-parse", &format!("{}^1", tip.trim())]),
        local_before
    );
    let theirs = git(a, &["rev-parse", "refs/notes/squad/data"]);
    assert_eq!(git(b, &["rev-parse", &format!("{}^2", tip.trim())]), theirs);
    assert_eq!(tip, remote_tip, "the push moved the remote to the merge");
    let message = git(b, &["log", "-1", "--format=%s", "refs/notes/squad/data"]);
    assert_eq!(
        message.trim(),
        "Merged notes from refs/notes/remotes/origin/squad/data into refs/notes/squad/data"
    );
    // git's own merge of what we merged changes nothing.
    git(
        b,
        &[
            "notes",
            "--ref=squad/data",
            "merge",
            "-s",
            "cat_sort_uniq",
            "refs/notes/remotes/origin/squad/data",
        ],
    );
    assert_eq!(git(b, &["rev-parse", "refs/notes/squad/data"]), tip);
    let shown = git(b, &["notes", "--ref=squad/data", "show", commit.as_str()]);
    for e in [&ea, &eb, &eg] {
        assert!(
            shown.contains(&e.id.to_string()),
            "git notes show has {}",
            e.id
        );
    }
    assert!(
        shown.contains("not json at all"),
        "unparseable lines are kept"
    );
    // In clone a, git's merge of the fetched tracking ref fast-forwards and shows every entry.
    git(a, &["fetch", "-q", "origin"]);
    git(
        a,
        &[
            "notes",
            "--ref=squad/data",
            "merge",
            "-s",
            "cat_sort_uniq",
            "refs/notes/remotes/origin/squad/data",
        ],
    );
    assert_eq!(git(a, &["rev-parse", "refs/notes/squad/data"]), tip);
    // And a sync in a now has nothing to do.
    let again = sync(&backend(a), &transport(a), "origin").unwrap();
    assert_eq!((again.fetched, again.merged, again.pushed), (0, 0, 0));
}

/// The fast paths: nothing to do, push only, fast-forward only; no merge commit is made.
#[test]
fn fast_paths_make_no_merge_commits() {
    let w = world(2);
    let (a, b) = (&w.clones[0], &w.clones[1]);
    let empty = sync(&backend(a), &transport(a), "origin").unwrap();
    assert_eq!(
        (empty.fetched, empty.merged, empty.pushed, empty.refs),
        (0, 0, 0, 0)
    );
    let e = entry("ops", "one");
    Notes::new(backend(a))
        .write(&agent("ops"), &w.commits[1], &e)
        .unwrap();
    let pushed = sync(&backend(a), &transport(a), "origin").unwrap();
    assert_eq!((pushed.fetched, pushed.merged, pushed.pushed), (0, 0, 1));
    let ff = sync(&backend(b), &transport(b), "origin").unwrap();
    assert_eq!((ff.fetched, ff.merged, ff.pushed), (1, 0, 0));
    let tip_a = git(a, &["rev-parse", "refs/notes/squad/ops"]);
    assert_eq!(git(b, &["rev-parse", "refs/notes/squad/ops"]), tip_a);
    assert_eq!(
        git(b, &["rev-list", "--count", "refs/notes/squad/ops"]).trim(),
        "1"
    );
    let ff_report = ff
        .tips
        .get(&NotesRef::new("refs/notes/squad/ops").unwrap())
        .unwrap();
    assert_eq!(ff_report.as_str(), tip_a.trim());
    // b writes on top: a fast-forwards to it.
    Notes::new(backend(b))
        .write(&agent("ops"), &w.commits[1], &entry("ops", "two"))
        .unwrap();
    sync(&backend(b), &transport(b), "origin").unwrap();
    let back = sync(&backend(a), &transport(a), "origin").unwrap();
    assert_eq!((back.fetched, back.merged, back.pushed), (1, 0, 0));
    assert_eq!(
        git(a, &["rev-list", "--count", "refs/notes/squad/ops"]).trim(),
        "2"
    );
}

/// A transport that lets another clone push first, once, so the first push loses its lease.
#[derive(Debug)]
struct LosesOneRace<'a> {
    inner: GitCliTransport,
    rival: &'a Path,
    raced: AtomicBool,
}

impl Transport for LosesOneRace<'_> {
    fn fetch(
        &self,
        remote: &str,
        refspecs: &[FetchRefspec],
    ) -> squad_notes::Result<Vec<TrackingRef>> {
        self.inner.fetch(remote, refspecs)
    }

    fn push(&self, remote: &str, updates: &[PushUpdate]) -> squad_notes::Result<Vec<PushResult>> {
        if !self.raced.swap(true, Ordering::SeqCst) {
            sync(&backend(self.rival), &transport(self.rival), remote).unwrap();
        }
        self.inner.push(remote, updates)
    }
}

#[test]
fn a_lost_push_race_is_fetched_merged_and_pushed_again() {
    let w = world(2);
    let (a, b) = (&w.clones[0], &w.clones[1]);
    let data = agent("data");
    let ea = entry("data", "a");
    let eb = entry("data", "b");
    Notes::new(backend(a))
        .write(&data, &w.commits[0], &ea)
        .unwrap();
    Notes::new(backend(b))
        .write(&data, &w.commits[0], &eb)
        .unwrap();
    let racing = LosesOneRace {
        inner: transport(a),
        rival: b,
        raced: AtomicBool::new(false),
    };
    let report = sync(&backend(a), &racing, "origin").unwrap();
    assert_eq!(report.rounds, 2, "the first push lost its lease");
    assert_eq!((report.fetched, report.merged, report.pushed), (1, 1, 1));
    sync(&backend(b), &transport(b), "origin").unwrap();
    let expected: BTreeSet<_> = [
        key("data", &w.commits[0], &ea),
        key("data", &w.commits[0], &eb),
    ]
    .into();
    assert_eq!(holdings(a).0, expected);
    assert_eq!(holdings(b).0, expected);
}

/// A transport whose pushes always lose: sync gives up with `Conflict` after its rounds, and the
/// local merge is kept.
#[derive(Debug)]
struct AlwaysLoses<'a> {
    inner: GitCliTransport,
    rival: &'a Path,
}

impl Transport for AlwaysLoses<'_> {
    fn fetch(
        &self,
        remote: &str,
        refspecs: &[FetchRefspec],
    ) -> squad_notes::Result<Vec<TrackingRef>> {
        self.inner.fetch(remote, refspecs)
    }

    fn push(&self, remote: &str, updates: &[PushUpdate]) -> squad_notes::Result<Vec<PushResult>> {
        let e = entry("data", "rival");
        Notes::new(backend(self.rival))
            .write(&agent("data"), &Oid::new(&"1".repeat(40)).unwrap(), &e)
            .unwrap();
        let t = transport(self.rival);
        let seen = t.fetch(remote, &[FetchRefspec::notes(remote)]).unwrap();
        let expected = seen.first().map(|r| r.oid.clone());
        t.push(
            remote,
            &[PushUpdate::same_name("refs/notes/squad/data", expected)],
        )
        .unwrap();
        self.inner.push(remote, updates)
    }
}

#[test]
fn sync_gives_up_after_its_rounds_and_keeps_the_merge() {
    let w = world(2);
    let (a, b) = (&w.clones[0], &w.clones[1]);
    let ea = entry("data", "a");
    Notes::new(backend(a))
        .write(&agent("data"), &w.commits[0], &ea)
        .unwrap();
    let options = SyncOptions {
        retry: RetryPolicy {
            max_attempts: 3,
            base: std::time::Duration::from_millis(1),
            cap: std::time::Duration::from_millis(2),
        },
        ..SyncOptions::default()
    };
    let losing = AlwaysLoses {
        inner: transport(a),
        rival: b,
    };
    let err = sync_with(&backend(a), &losing, "origin", &options).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert!(
        holdings(a).0.contains(&key("data", &w.commits[0], &ea)),
        "nothing local lost"
    );
    // A normal sync afterwards succeeds and both entries end up everywhere.
    sync(&backend(a), &transport(a), "origin").unwrap();
    sync(&backend(b), &transport(b), "origin").unwrap();
    assert_eq!(holdings(a).0, holdings(b).0);
    assert_eq!(
        holdings(a).0.len(),
        2 + 2,
        "a's entry and the rival's three (one per round)"
    );
}

/// Bad remotes: an unknown name is NotFound, an option-like name is InvalidInput; nothing changes.
#[test]
fn bad_remotes_are_refused_and_change_nothing() {
    let w = world(1);
    let a = &w.clones[0];
    Notes::new(backend(a))
        .write(&agent("data"), &w.commits[0], &entry("data", "x"))
        .unwrap();
    let before = git(a, &["for-each-ref"]);
    for (remote, kind) in [
        ("nope", ErrorKind::NotFound),
        ("--upload-pack=touch pwned", ErrorKind::InvalidInput),
        ("", ErrorKind::InvalidInput),
        ("a..b", ErrorKind::InvalidInput),
    ] {
        let err = sync(&backend(a), &transport(a), remote).unwrap_err();
        assert_eq!(err.kind(), kind, "remote {remote:?}: {err}");
    }
    assert_eq!(git(a, &["for-each-ref"]), before);
    assert!(!a.join("pwned").exists());
}

/// The local merge step on the in-memory backend: union by id, non-entry lines from both sides
/// kept, objects on one side taken as they are, and a lost race with a local writer retried.
#[test]
fn merge_remote_unions_by_entry_id_in_memory() {
    let store = InMemoryNotes::new();
    let ours = NotesRef::new("refs/notes/squad/data").unwrap();
    let theirs = NotesRef::new("refs/notes/remotes/origin/squad/data").unwrap();
    let (c1, c2, c3) = (
        Oid::new(&"1".repeat(40)).unwrap(),
        Oid::new(&"2".repeat(40)).unwrap(),
        Oid::new(&"3".repeat(40)).unwrap(),
    );
    let (e1, e2, e3) = (entry("data", "1"), entry("data", "2"), entry("data", "3"));
    let base = store
        .update(&ours, None, &[NoteEdit::set(c1.clone(), e1.to_line())], "m")
        .unwrap();
    store.fast_forward(&theirs, None, &base).unwrap();
    let mine = format!("{}{}mine only\n", e1.to_line(), e2.to_line());
    let local = store
        .update(
            &ours,
            Some(&base),
            &[
                NoteEdit::set(c1.clone(), mine),
                NoteEdit::set(c2.clone(), "local\n"),
            ],
            "m",
        )
        .unwrap();
    let their_note = format!("{}\n{}theirs only\n", e3.to_line(), e1.to_line());
    let remote = store
        .update(
            &theirs,
            Some(&base),
            &[
                NoteEdit::set(c1.clone(), their_note),
                NoteEdit::set(c3.clone(), "remote\n"),
            ],
            "m",
        )
        .unwrap();
    let merged = merge_remote(&store, &ours, &remote, "origin", &RetryPolicy::default()).unwrap();
    assert_eq!(merged.action, MergeAction::Merged);
    assert_eq!(merged.objects_changed, 2, "c1 unioned, c3 taken");
    assert!(store.is_ancestor(&local, &merged.tip).unwrap());
    assert!(store.is_ancestor(&remote, &merged.tip).unwrap());
    let note = parse_note(&store.read(&merged.tip, &c1).unwrap().unwrap());
    let ids: BTreeSet<String> = note.entries.iter().map(|e| e.id.to_string()).collect();
    let want: BTreeSet<String> = [&e1, &e2, &e3].iter().map(|e| e.id.to_string()).collect();
    assert_eq!(ids, want);
    assert_eq!(note.entries.len(), 3, "e1 once");
    let texts: Vec<&str> = note.unparsed.iter().map(|u| u.text.as_str()).collect();
    assert_eq!(texts, ["mine only", "theirs only"]);
    assert_eq!(
        store.read(&merged.tip, &c2).unwrap(),
        Some(b"local\n".to_vec())
    );
    assert_eq!(
        store.read(&merged.tip, &c3).unwrap(),
        Some(b"remote\n".to_vec())
    );
    // Merging again is a no-op; merging the merge into the tracking ref fast-forwards.
    let again = merge_remote(&store, &ours, &remote, "origin", &RetryPolicy::default()).unwrap();
    assert_eq!(again.action, MergeAction::LocalAhead);
    let ff = merge_remote(
        &store,
        &theirs,
        &merged.tip,
        "local",
        &RetryPolicy::default(),
    )
    .unwrap();
    assert_eq!(ff.action, MergeAction::FastForward);
}

/// A backend that cannot merge makes sync fail with `Unsupported`, not lose notes.
#[derive(Debug)]
struct NoMerge(InMemoryNotes);

impl NotesBackend for NoMerge {
    fn tip(&self, r: &NotesRef) -> squad_notes::Result<Option<Oid>> {
        self.0.tip(r)
    }
    fn read(&self, tip: &Oid, object: &Oid) -> squad_notes::Result<Option<Vec<u8>>> {
        self.0.read(tip, object)
    }
    fn list(&self, tip: &Oid) -> squad_notes::Result<Vec<Oid>> {
        self.0.list(tip)
    }
    fn update(
        &self,
        r: &NotesRef,
        expected: Option<&Oid>,
        edits: &[NoteEdit],
        message: &str,
    ) -> squad_notes::Result<Oid> {
        self.0.update(r, expected, edits, message)
    }
}

#[test]
fn a_backend_without_merge_support_is_unsupported() {
    let b = NoMerge(InMemoryNotes::new());
    let r = NotesRef::new("refs/notes/squad/data").unwrap();
    let tip = b
        .update(
            &r,
            None,
            &[NoteEdit::set(Oid::new(&"1".repeat(40)).unwrap(), "x")],
            "m",
        )
        .unwrap();
    let other = NotesRef::new("refs/notes/remotes/origin/squad/data").unwrap();
    let theirs = b
        .update(
            &other,
            None,
            &[NoteEdit::set(Oid::new(&"2".repeat(40)).unwrap(), "y")],
            "m",
        )
        .unwrap();
    let err = merge_remote(&b, &r, &theirs, "x", &RetryPolicy::default()).unwrap_err();
    assert_eq!(b.tip(&r).unwrap(), Some(tip), "nothing changed");
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert_eq!(
        b.list_refs("refs/notes/").unwrap_err().kind(),
        ErrorKind::Unsupported
    );
}

mod union_property {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;
    use squad_notes::sync::merge_remote;
    use squad_notes::{InMemoryNotes, NoteEdit, NotesBackend, NotesRef, Oid, RetryPolicy};

    use crate::common::entry;

    fn object(i: u8) -> Oid {
        Oid::new(&format!("{:x}", i % 16).repeat(40)).unwrap()
    }

    /// Builds one side: per object, its entries' lines (and a stray line when `junk`).
    fn side(entries: &[(u8, String)], junk: bool) -> Vec<NoteEdit> {
        let mut notes: BTreeMap<Oid, String> = BTreeMap::new();
        for (o, line) in entries {
            notes.entry(object(*o)).or_default().push_str(line);
        }
        notes
            .into_iter()
            .map(|(o, mut text)| {
                if junk {
                    text.push_str("junk line\n");
                }
                NoteEdit::set(o, text)
            })
            .collect()
    }

    fn ids(store: &InMemoryNotes, tip: &Oid) -> BTreeSet<(Oid, String)> {
        let mut out = BTreeSet::new();
        for (o, bytes) in store.read_all(tip).unwrap() {
            for e in squad_notes::format::parse_note(&bytes).entries {
                out.insert((o.clone(), e.id.to_string()));
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        /// For any split of entries between two diverged sides (some on both), the merge holds
        /// exactly the union of ids, in either direction, and stray lines survive.
        #[test]
        fn merge_is_the_union_by_id(
            placement in proptest::collection::vec((0u8..4, 0u8..3), 1..24),
            junk in any::<bool>(),
        ) {
            let store = InMemoryNotes::new();
            let a = NotesRef::new("refs/notes/squad/a").unwrap();
            let b = NotesRef::new("refs/notes/squad/b").unwrap();
            let base = store.update(&a, None, &[NoteEdit::set(object(15), "base\n")], "m").unwrap();
            store.fast_forward(&b, None, &base).unwrap();
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            let mut all = BTreeSet::new();
            for (o, where_) in &placement {
                let e = entry("data", "x");
                let line = e.to_line();
                all.insert((object(*o), e.id.to_string()));
                if *where_ != 1 { ours.push((*o, line.clone())); }
                if *where_ != 0 { theirs.push((*o, line)); }
            }
            let mut ta = base.clone();
            if !ours.is_empty() {
                ta = store.update(&a, Some(&base), &side(&ours, junk), "m").unwrap();
            }
            let mut tb = base.clone();
            if !theirs.is_empty() {
                tb = store.update(&b, Some(&base), &side(&theirs, false), "m").unwrap();
            }
            let m1 = merge_remote(&store, &a, &tb, "b", &RetryPolicy::default()).unwrap();
            prop_assert_eq!(ids(&store, &m1.tip), all.clone());
            prop_assert!(store.is_ancestor(&ta, &m1.tip).unwrap());
            prop_assert!(store.is_ancestor(&tb, &m1.tip).unwrap());
            let m2 = merge_remote(&store, &b, &ta, "a", &RetryPolicy::default()).unwrap();
            prop_assert_eq!(ids(&store, &m2.tip), all);
            if junk && !ours.is_empty() {
                for tip in [&m1.tip, &m2.tip] {
                    let kept = store.read_all(tip).unwrap().iter().any(|(_, b)| {
                        String::from_utf8_lossy(b).contains("junk line")
                    });
                    prop_assert!(kept, "the stray line is kept");
                }
            }
        }
    }
}

/// `sync_all` carries the state branch with the notes: promotions made in two clones converge
/// on one commit holding each entry once, a remote without the branch is no error, and each
/// stage's progress only moves forward.
#[test]
fn sync_all_carries_the_state_branch_and_reports_forward_progress() {
    use squad_notes::state::{OrphanBranchStore, StateStoreExt};
    use squad_notes::sync::{SyncStage, pull_state, sync_all};
    let w = world(2);
    let (a, b) = (&w.clones[0], &w.clones[1]);
    let ns = agent("data");
    Notes::new(backend(a))
        .write(&ns, &w.commits[0], &entry("data", "from a"))
        .unwrap();
    // No squad-state anywhere yet: pulling it is a no-op.
    let sa = OrphanBranchStore::open(a).unwrap();
    let sb = OrphanBranchStore::open(b).unwrap();
    let pulled = pull_state(&sa, &transport(a), "origin").unwrap();
    assert!(!pulled.fetched && pulled.tip.is_none());
    // Both clones "promote" the same entry and one of their own.
    let section = |id: &str| format!("### {id}\n\n- **Entry:** {id}\n\n");
    sa.append("decisions.md", section("shared").as_bytes())
        .unwrap();
    sa.append("decisions.md", section("only-a").as_bytes())
        .unwrap();
    sa.append("ledger/promoted", b"shared x y r1\nonly-a x y r1\n")
        .unwrap();
    sb.append("decisions.md", section("shared").as_bytes())
        .unwrap();
    sb.append("decisions.md", section("only-b").as_bytes())
        .unwrap();
    sb.append("ledger/promoted", b"shared x y r2\nonly-b x y r2\n")
        .unwrap();
    let events = std::sync::Mutex::new(Vec::new());
    let progress = |p: squad_notes::sync::SyncProgress| events.lock().unwrap().push(p);
    for (clone, store) in [(a, &sa), (b, &sb), (a, &sa)] {
        let report = sync_all(
            &backend(clone),
            Some(store),
            &transport(clone),
            "origin",
            &SyncOptions::default(),
            &progress,
        )
        .unwrap();
        assert!(report.state.is_some());
        let events = std::mem::take(&mut *events.lock().unwrap());
        for stage in [SyncStage::Fetch, SyncStage::Merge] {
            let done: Vec<u64> = events
                .iter()
                .filter(|e| e.stage == stage)
                .map(|e| e.done)
                .collect();
            assert!(done.windows(2).all(|w| w[0] <= w[1]), "{events:?}");
        }
    }
    let decisions = |repo: &Path| git(repo, &["show", "squad-state:decisions.md"]);
    let remote = git(&w.remote, &["show", "squad-state:decisions.md"]);
    assert_eq!(decisions(a), remote);
    assert_eq!(decisions(b), remote);
    for id in ["shared", "only-a", "only-b"] {
        assert_eq!(
            remote.matches(&format!("- **Entry:** {id}\n")).count(),
            1,
            "{remote}"
        );
    }
    let ledger = git(&w.remote, &["show", "squad-state:ledger/promoted"]);
    assert_eq!(ledger.lines().count(), 3, "{ledger}");
    assert_plain_git_works(a);
    assert_plain_git_works(b);
}
