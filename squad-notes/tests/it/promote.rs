//! Promotion and archiving on real repositories: exactly once, squash merges, closed branches,
//! dry runs, watermarks and the default-branch rule.

use std::collections::HashSet;
use std::sync::{Arc, Barrier};

use squad_model::{NoteEntry, NoteType};
use squad_notes::promote::{
    ARCHIVED_LEDGER_KEY, ArchiveOptions, DECISIONS_KEY, PROMOTED_LEDGER_KEY, PromoteOptions,
    Promoter, WATERMARK_KEY,
};
use squad_notes::state::{
    InMemoryStateStore, OrphanBranchStore, StateEdit, StateStore, StateStoreExt, WorktreeStateStore,
};
use squad_notes::{ErrorKind, Notes, Oid};

use crate::common::{Repo, agent};

fn decision(agent_name: &str, text: &str, promote: bool) -> NoteEntry {
    let mut e = NoteEntry::new(agent(agent_name), NoteType::Decision);
    e.decision = Some(text.to_owned());
    e.reasoning = Some(format!("because of {text}\nsecond line"));
    e.alternatives_considered = Some(vec!["a".into(), "b".into()]);
    if promote {
        e.promote_to_permanent = Some(true);
    }
    e
}

fn research(topic: &str, archive: bool) -> NoteEntry {
    let mut e = NoteEntry::new(agent("data"), NoteType::Research);
    e.topic = Some(topic.to_owned());
    e.content = Some(format!("notes about {topic}"));
    if archive {
        e.archive_on_close = Some(true);
    }
    e
}

fn write(repo: &Repo, ns: &str, commit: &Oid, e: &NoteEntry) {
    Notes::new(repo.backend())
        .write(&agent(ns), commit, e)
        .unwrap();
}

fn promoter(repo: &Repo) -> Promoter<OrphanBranchStore> {
    Promoter::open(repo.path(), OrphanBranchStore::open(repo.path()).unwrap()).unwrap()
}

fn state_read(repo: &Repo, key: &str) -> String {
    let s = OrphanBranchStore::open(repo.path()).unwrap();
    String::from_utf8(s.read(key).unwrap().unwrap_or_default()).unwrap()
}

fn refs(repo: &Repo) -> String {
    repo.git_ok(&["for-each-ref", "--format=%(refname) %(objectname)"])
}

fn ids(report: &[squad_notes::promote::FoundEntry]) -> Vec<String> {
    report.iter().map(|f| f.entry.id.to_string()).collect()
}

/// main with two commits: a flagged decision on the first, an unflagged one and a line that is
/// not JSON on the second; the default branch configured as `main`.
fn fixture() -> (Repo, Oid, Oid, NoteEntry) {
    let repo = Repo::new();
    let c1 = repo.commit("one");
    let c2 = repo.commit("two");
    let flagged = decision("data", "Use JWT RS256", true);
    write(&repo, "data", &c1, &flagged);
    write(
        &repo,
        "data",
        &c2,
        &decision("data", "Not for the record", false),
    );
    repo.git_ok(&[
        "notes",
        "--ref=squad/data",
        "append",
        "-m",
        "not json {",
        c2.as_str(),
    ]);
    repo.git_ok(&["config", "squad.defaultBranch", "main"]);
    (repo, c1, c2, flagged)
}

#[test]
fn a_decision_is_promoted_once_across_two_runs_and_skips_are_counted_not_lost() {
    let (repo, c1, c2, flagged) = fixture();
    let p = promoter(&repo);
    let first = p.promote(&PromoteOptions::default()).unwrap();
    assert_eq!(first.branch, "refs/heads/main");
    assert_eq!(ids(&first.promoted), [flagged.id.to_string()]);
    assert_eq!(first.promoted[0].commit, c1);
    assert_eq!(first.unflagged, 1);
    assert_eq!(first.unparseable.len(), 1);
    assert_eq!(first.unparseable[0].commit, c2);
    assert_eq!(first.skipped(), 2);
    assert!(!first.incremental);

    let md = state_read(&repo, DECISIONS_KEY);
    assert!(md.starts_with("# Decisions\n"), "{md}");
    assert!(md.contains("### Use JWT RS256\n"), "{md}");
    assert!(
        md.contains("- **Reasoning:** because of Use JWT RS256<br>second line\n"),
        "{md}"
    );
    assert!(md.contains("- **Alternatives considered:** a; b\n"), "{md}");
    assert!(md.contains(&format!("- **Commit:** {c1}\n")), "{md}");
    assert!(
        md.contains(&format!("- **Entry:** {}\n", flagged.id)),
        "{md}"
    );
    assert!(md.contains("- **Agent:** data\n"), "{md}");
    assert!(!md.contains("Not for the record"), "{md}");

    // The unparseable line is still in the note.
    let note = repo.git_ok(&["notes", "--ref=squad/data", "show", c2.as_str()]);
    assert!(note.contains("not json {"));

    let state_tip = refs(&repo);
    let second = promoter(&repo).promote(&PromoteOptions::default()).unwrap();
    assert!(second.promoted.is_empty());
    assert!(second.incremental);
    assert_eq!(second.commits_scanned, 0);
    assert_eq!(refs(&repo), state_tip, "a no-op run writes nothing");
    assert_eq!(
        state_read(&repo, DECISIONS_KEY)
            .matches("### Use JWT")
            .count(),
        1
    );
    let ledger = state_read(&repo, PROMOTED_LEDGER_KEY);
    assert!(
        ledger.starts_with(&format!("{} refs/notes/squad/data {c1} ", flagged.id)),
        "{ledger}"
    );
    assert_eq!(ledger.lines().count(), 1);
    repo.fsck();
}

#[test]
fn two_concurrent_runs_promote_each_decision_once() {
    let repo = Repo::new();
    let mut expected = HashSet::new();
    for i in 0..12 {
        let c = repo.commit(&format!("c{i}"));
        let ns = if i % 2 == 0 { "data" } else { "worf" };
        let e = decision(ns, &format!("Decision {i}"), true);
        expected.insert(e.id.to_string());
        write(&repo, ns, &c, &e);
    }
    repo.git_ok(&["config", "squad.defaultBranch", "main"]);
    for round in 0..3 {
        let barrier = Arc::new(Barrier::new(2));
        let results: Vec<Vec<String>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    let barrier = barrier.clone();
                    let repo = &repo;
                    s.spawn(move || {
                        let p = promoter(repo);
                        barrier.wait();
                        ids(&p.promote(&PromoteOptions::default()).unwrap().promoted)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let all: Vec<String> = results.concat();
        if round == 0 {
            let unique: HashSet<String> = all.iter().cloned().collect();
            assert_eq!(all.len(), unique.len(), "promoted twice: {results:?}");
            assert_eq!(unique, expected);
        } else {
            assert!(all.is_empty(), "round {round} promoted again: {all:?}");
        }
    }
    let md = state_read(&repo, DECISIONS_KEY);
    for id in &expected {
        assert_eq!(md.matches(&format!("**Entry:** {id}\n")).count(), 1, "{id}");
    }
    assert_eq!(md.matches("# Decisions\n").count(), 1);
    assert_eq!(state_read(&repo, PROMOTED_LEDGER_KEY).lines().count(), 12);
}

#[test]
fn squash_merged_pr_is_promoted_with_merged_from() {
    let repo = Repo::new();
    repo.commit("base");
    repo.git_ok(&["checkout", "-q", "-b", "feature"]);
    let f1 = repo.commit("feature one");
    let f2 = repo.commit("feature two");
    let d1 = decision("data", "Cache tokens", true);
    let d2 = decision("worf", "Rotate keys weekly", true);
    write(&repo, "data", &f1, &d1);
    write(&repo, "worf", &f2, &d2);
    repo.git_ok(&["checkout", "-q", "main"]);
    repo.git_ok(&["merge", "-q", "--squash", "feature"]);
    repo.git_ok(&["commit", "-q", "--allow-empty", "-m", "squashed feature"]);
    repo.git_ok(&["config", "squad.defaultBranch", "main"]);

    let plain = promoter(&repo).promote(&PromoteOptions::default()).unwrap();
    assert!(plain.promoted.is_empty(), "{:?}", plain.promoted);

    let squash = promoter(&repo)
        .promote(&PromoteOptions {
            branch: Some("main".into()),
            merged_from: Some("feature".into()),
            dry_run: false,
        })
        .unwrap();
    let mut got = ids(&squash.promoted);
    got.sort();
    let mut want = vec![d1.id.to_string(), d2.id.to_string()];
    want.sort();
    assert_eq!(got, want);
    assert_eq!(squash.commits_scanned, 2);
    let md = state_read(&repo, DECISIONS_KEY);
    assert!(md.contains("### Cache tokens") && md.contains("### Rotate keys weekly"));

    // Again: nothing new.
    let again = promoter(&repo)
        .promote(&PromoteOptions {
            branch: Some("main".into()),
            merged_from: Some(f2.to_string()),
            dry_run: false,
        })
        .unwrap();
    assert!(again.promoted.is_empty());
    assert_eq!(again.already_promoted, 2);
}

#[test]
fn closed_branch_research_is_archived_once_and_never_promoted() {
    let repo = Repo::new();
    repo.commit("base");
    repo.git_ok(&["checkout", "-q", "-b", "rejected"]);
    let r1 = repo.commit("spike");
    let keep = research("OAuth device flow", true);
    let skip = research("Scratch", false);
    let mut flagged_decision = decision("data", "Adopt device flow", true);
    flagged_decision.archive_on_close = Some(true);
    write(&repo, "research", &r1, &keep);
    write(&repo, "research", &r1, &skip);
    write(&repo, "data", &r1, &flagged_decision);
    repo.git_ok(&["checkout", "-q", "main"]);
    repo.git_ok(&["config", "squad.defaultBranch", "main"]);

    // Rejected commits are not promoted.
    assert!(
        promoter(&repo)
            .promote(&PromoteOptions::default())
            .unwrap()
            .promoted
            .is_empty()
    );

    let report = promoter(&repo)
        .archive(&ArchiveOptions {
            closed: "rejected".into(),
            branch: None,
            dry_run: false,
        })
        .unwrap();
    let archived: HashSet<String> = report
        .archived
        .iter()
        .map(|(f, _)| f.entry.id.to_string())
        .collect();
    assert_eq!(
        archived,
        HashSet::from([keep.id.to_string(), flagged_decision.id.to_string()])
    );
    assert_eq!(report.unflagged, 1);
    let (_, key) = report
        .archived
        .iter()
        .find(|(f, _)| f.entry.id == keep.id)
        .unwrap();
    assert!(
        key.starts_with("research/") && key.contains("-oauth-device-flow-"),
        "{key}"
    );
    let file = state_read(&repo, key);
    assert!(file.starts_with("# OAuth device flow\n"), "{file}");
    assert!(
        file.contains(&keep.to_line().trim_end().to_string()),
        "{file}"
    );
    assert!(file.contains(&format!("- **Commit:** {r1}")), "{file}");
    // The source note stays.
    assert!(
        repo.git_ok(&["notes", "--ref=squad/research", "show", r1.as_str()])
            .contains("OAuth")
    );

    let again = promoter(&repo)
        .archive(&ArchiveOptions {
            closed: r1.to_string(),
            branch: Some("main".into()),
            dry_run: false,
        })
        .unwrap();
    assert!(again.archived.is_empty());
    assert_eq!(again.already_archived, 2);
    assert_eq!(state_read(&repo, ARCHIVED_LEDGER_KEY).lines().count(), 2);
}

#[test]
fn dry_run_leaves_every_ref_untouched() {
    let (repo, _, _, flagged) = fixture();
    let before = refs(&repo);
    let report = promoter(&repo)
        .promote(&PromoteOptions {
            dry_run: true,
            ..PromoteOptions::default()
        })
        .unwrap();
    assert!(report.dry_run);
    assert_eq!(ids(&report.promoted), [flagged.id.to_string()]);
    assert_eq!(refs(&repo), before);
    assert!(!before.contains("squad-state"));
    // And an archive dry run too.
    repo.git_ok(&["branch", "closed", "HEAD"]);
    let before = refs(&repo);
    promoter(&repo)
        .archive(&ArchiveOptions {
            closed: "closed".into(),
            branch: Some("main".into()),
            dry_run: true,
        })
        .unwrap();
    assert_eq!(refs(&repo), before);
}

#[test]
fn incremental_runs_see_new_commits_and_notes_added_later_to_old_commits() {
    let (repo, c1, c2, _) = fixture();
    let p = promoter(&repo);
    p.promote(&PromoteOptions::default()).unwrap();

    // A note added later to an old commit: the notes ref moved, the branch did not.
    let late = decision("worf", "Late decision on an old commit", true);
    write(&repo, "worf", &c1, &late);
    let r = p.promote(&PromoteOptions::default()).unwrap();
    assert!(r.incremental);
    assert_eq!(ids(&r.promoted), [late.id.to_string()]);

    // New commits on the branch, with notes; plus an old note changed in another ref.
    let c3 = repo.commit("three");
    let new = decision("data", "New on c3", true);
    write(&repo, "data", &c3, &new);
    let old_again = decision("data", "Second thought on c2", true);
    write(&repo, "data", &c2, &old_again);
    let r = p.promote(&PromoteOptions::default()).unwrap();
    let mut got = ids(&r.promoted);
    got.sort();
    let mut want = vec![new.id.to_string(), old_again.id.to_string()];
    want.sort();
    assert_eq!(got, want);
    assert_eq!(
        r.commits_scanned,
        1 + 2,
        "one new commit, then a walk from c3 stopped at c2"
    );

    // A note on a commit that is not on the branch is not promoted by the incremental run.
    repo.git_ok(&["checkout", "-q", "-b", "side"]);
    let side = repo.commit("side");
    write(&repo, "data", &side, &decision("data", "Side only", true));
    let r = p.promote(&PromoteOptions::default()).unwrap();
    assert!(r.promoted.is_empty());

    // The watermark is readable JSON naming the branch and every notes ref.
    let wm = state_read(&repo, WATERMARK_KEY);
    let v: serde_json::Value = serde_json::from_str(&wm).unwrap();
    let mark = &v["branches"]["refs/heads/main"];
    assert_eq!(mark["tip"], c3.to_string());
    assert!(mark["notes"]["refs/notes/squad/data"].is_string());
    assert!(mark["notes"]["refs/notes/squad/worf"].is_string());
}

#[test]
fn the_default_branch_is_config_then_remote_head_never_local_head() {
    let repo = Repo::new();
    let c1 = repo.commit("one");
    let e = decision("data", "On local HEAD only", true);
    write(&repo, "data", &c1, &e);

    // Neither set: a message that says how to set it.
    let err = promoter(&repo)
        .promote(&PromoteOptions::default())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(
        err.to_string().contains("git config squad.defaultBranch"),
        "{err}"
    );

    // A remote whose HEAD points at a branch without the commit: local HEAD is not used.
    let remote = tempfile::tempdir().unwrap();
    let out = repo
        .cmd(&["init", "-q", "--bare", "-b", "main"])
        .arg(remote.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    repo.git_ok(&["remote", "add", "origin", remote.path().to_str().unwrap()]);
    repo.git_ok(&["checkout", "-q", "--orphan", "other"]);
    repo.commit("unrelated root");
    repo.git_ok(&["push", "-q", "origin", "other:main"]);
    repo.git_ok(&["fetch", "-q", "origin"]);
    repo.git_ok(&["remote", "set-head", "origin", "main"]);
    repo.git_ok(&["checkout", "-q", "main"]);
    let p = promoter(&repo);
    assert_eq!(p.default_branch().unwrap(), "refs/remotes/origin/main");
    assert!(
        p.promote(&PromoteOptions::default())
            .unwrap()
            .promoted
            .is_empty()
    );

    // The config wins over the remote HEAD (configuration is read when a promoter is opened).
    repo.git_ok(&["config", "squad.defaultBranch", "main"]);
    let p = promoter(&repo);
    assert_eq!(p.default_branch().unwrap(), "refs/heads/main");
    assert_eq!(
        ids(&p.promote(&PromoteOptions::default()).unwrap().promoted),
        [e.id.to_string()]
    );

    // Bad inputs: a configured branch that does not exist, an unknown --branch, an unknown rev.
    repo.git_ok(&["config", "squad.defaultBranch", "no-such-branch"]);
    let p = promoter(&repo);
    let err = p.default_branch().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(err.to_string().contains("no-such-branch"), "{err}");
    let err = p
        .promote(&PromoteOptions {
            branch: Some("nope".into()),
            ..PromoteOptions::default()
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    let err = p
        .promote(&PromoteOptions {
            branch: Some("main".into()),
            merged_from: Some("deadbeef-not-a-rev".into()),
            dry_run: false,
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(err.to_string().contains("deadbeef-not-a-rev"));
}

/// Progress only moves forward within a run (issue 19: the counter went 0, 1, 0, 1, 2 when
/// several namespaces were read), and the notes read add up to the total announced.
#[test]
fn progress_only_moves_forward_across_namespaces() {
    use squad_notes::promote::Stage;
    let (repo, c1, c2, _) = fixture();
    write(
        &repo,
        "worf",
        &c1,
        &decision("worf", "Pin the TLS version", true),
    );
    write(&repo, "research", &c2, &research("tokens", false));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let p = promoter(&repo).with_progress(move |pr| sink.lock().unwrap().push(pr));
    // Twice: a cold run, then an incremental one after a new commit and a new note.
    p.promote(&PromoteOptions::default()).unwrap();
    let cold = std::mem::take(&mut *seen.lock().unwrap());
    let c3 = repo.commit("three");
    write(&repo, "data", &c3, &decision("data", "later", true));
    write(
        &repo,
        "worf",
        &c1,
        &decision("worf", "late note on an old commit", true),
    );
    p.promote(&PromoteOptions::default()).unwrap();
    let warm = std::mem::take(&mut *seen.lock().unwrap());
    for (run, events) in [("cold", &cold), ("incremental", &warm)] {
        for stage in [Stage::WalkCommits, Stage::ReadNotes] {
            let done: Vec<u64> = events
                .iter()
                .filter(|e| e.stage == stage)
                .map(|e| e.done)
                .collect();
            assert!(
                done.windows(2).all(|w| w[0] <= w[1]),
                "{run} {stage:?}: {events:?}"
            );
        }
        let reads: Vec<_> = events
            .iter()
            .filter(|e| e.stage == Stage::ReadNotes)
            .collect();
        assert!(
            reads.iter().all(|e| e.total.is_some_and(|t| e.done <= t)),
            "{run}: {events:?}"
        );
        assert!(!reads.is_empty(), "{run}: {events:?}");
    }
    let last = cold.iter().rfind(|e| e.stage == Stage::ReadNotes).unwrap();
    assert_eq!((last.done, last.total), (4, Some(4)), "{cold:?}");
}

/// `StateEdit::Expect` is what makes the ledger a compare-and-swap: every store honours it.
#[test]
fn expect_edits_fail_the_whole_batch_in_every_store() {
    let repo = Repo::new();
    let dir = tempfile::tempdir().unwrap();
    let stores: Vec<Box<dyn StateStore>> = vec![
        Box::new(InMemoryStateStore::new()),
        Box::new(WorktreeStateStore::new(dir.path().join("state"))),
        Box::new(OrphanBranchStore::open(repo.path()).unwrap()),
    ];
    for store in stores {
        store.write("ledger", b"a\n").unwrap();
        let err = store
            .apply(&[
                StateEdit::expect("ledger", Some("stale\n")),
                StateEdit::append("ledger", "b\n"),
                StateEdit::write("other", "x"),
            ])
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict, "{store:?}");
        assert_eq!(store.read("ledger").unwrap().unwrap(), b"a\n");
        assert_eq!(store.read("other").unwrap(), None);
        store
            .apply(&[
                StateEdit::expect("ledger", Some("a\n")),
                StateEdit::expect("missing", None::<Vec<u8>>),
                StateEdit::append("ledger", "b\n"),
            ])
            .unwrap();
        assert_eq!(store.read("ledger").unwrap().unwrap(), b"a\nb\n");
        let err = store
            .apply(&[StateEdit::expect("missing", Some("x"))])
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict);
    }
}
