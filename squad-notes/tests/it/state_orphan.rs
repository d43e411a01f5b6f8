//! The orphan-branch state store against real repositories and the real git CLI.

use std::path::Path;
use std::sync::Arc;

use squad_notes::ErrorKind;
use squad_notes::state::{
    OrphanBranchStore, STATE_REF, StateEdit, StateStore, StateStoreExt, conformance,
};

use crate::state_git::{configure, git, git_output, repo_with_commit};

fn fresh_repo() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo_with_commit(&dir.path().join("repo"));
    (dir, repo)
}

#[test]
fn orphan_store_conforms() {
    let (_dir, repo) = fresh_repo();
    conformance::run_all(&OrphanBranchStore::open(&repo).unwrap());
    assert_fsck_clean(&repo);
}

#[test]
fn boxed_orphan_store_conforms() {
    let (_dir, repo) = fresh_repo();
    conformance::run_all(&Box::new(OrphanBranchStore::open(&repo).unwrap()));
}

#[test]
fn shared_dyn_orphan_store_conforms() {
    let (_dir, repo) = fresh_repo();
    let store: Arc<dyn StateStore> = Arc::new(OrphanBranchStore::open(&repo).unwrap());
    conformance::run_all(&store);
}

#[test]
fn orphan_appends_from_separate_repository_handles_lose_nothing() {
    let (_dir, repo) = fresh_repo();
    conformance::concurrent_appends_from(|| OrphanBranchStore::open(&repo).unwrap());
    assert_fsck_clean(&repo);
    // One commit per append, plus the shared root commit.
    let count = git(&repo, &["rev-list", "--count", "squad-state"]);
    assert_eq!(
        count.trim(),
        (conformance::APPEND_THREADS * conformance::APPENDS_PER_THREAD + 1).to_string()
    );
}

#[track_caller]
fn assert_fsck_clean(repo: &Path) {
    let out = git_output(repo, &["fsck", "--strict", "--no-progress"]);
    assert!(
        out.status.success()
            && String::from_utf8_lossy(&out.stderr)
                .lines()
                .all(|l| l.starts_with("notice:")),
        "git fsck: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn read_file(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

#[test]
fn writes_never_touch_head_index_or_work_tree() {
    let (_dir, repo) = fresh_repo();
    // A dirty work tree: a modified tracked file, a staged new file and an untracked file.
    std::fs::write(repo.join("README.md"), "modified, not staged\n").unwrap();
    std::fs::write(repo.join("staged.txt"), "staged\n").unwrap();
    git(&repo, &["add", "staged.txt"]);
    std::fs::write(repo.join("untracked.txt"), "untracked\n").unwrap();
    // An agent's notes ref exists beside the state branch.
    git(
        &repo,
        &[
            "notes",
            "--ref=squad/data",
            "add",
            "-m",
            "{\"a\":1}",
            "HEAD",
        ],
    );

    let head = read_file(&repo.join(".git/HEAD"));
    let index = read_file(&repo.join(".git/index"));
    let status = git(
        &repo,
        &["status", "--porcelain=v1", "--untracked-files=all"],
    );
    let head_commit = git(&repo, &["rev-parse", "HEAD"]);
    let notes_tip = git(&repo, &["rev-parse", "refs/notes/squad/data"]);

    let store = OrphanBranchStore::open(&repo).unwrap();
    for i in 0..40 {
        store
            .append("decisions.md", format!("- decision {i}\n").as_bytes())
            .unwrap();
        store
            .write(&format!("research/{i}.md"), b"research\n")
            .unwrap();
        if i % 3 == 0 {
            store.delete(&format!("research/{i}.md")).unwrap();
        }
    }
    store
        .write("README.md", b"state, not the work tree\n")
        .unwrap();

    assert_eq!(read_file(&repo.join(".git/HEAD")), head, "HEAD file");
    assert_eq!(read_file(&repo.join(".git/index")), index, "index file");
    assert_eq!(
        git(
            &repo,
            &["status", "--porcelain=v1", "--untracked-files=all"]
        ),
        status
    );
    assert_eq!(git(&repo, &["rev-parse", "HEAD"]), head_commit);
    assert_eq!(
        read_file(&repo.join("README.md")),
        b"modified, not staged\n"
    );
    assert_eq!(
        git(&repo, &["rev-parse", "refs/notes/squad/data"]),
        notes_tip
    );
    assert_eq!(
        git(&repo, &["notes", "--ref=squad/data", "show", "HEAD"]),
        "{\"a\":1}\n"
    );
    // The state is readable with plain git.
    let decisions = git(&repo, &["show", "squad-state:decisions.md"]);
    assert_eq!(decisions.lines().count(), 40);
    assert!(decisions.starts_with("- decision 0\n"));
    // `refs/notes/squad` itself never exists (it would collide with refs/notes/squad/<agent>).
    let refs = git(&repo, &["for-each-ref", "--format=%(refname)"]);
    assert!(
        !refs.lines().any(|r| r == "refs/notes/squad"),
        "refs: {refs}"
    );
    assert!(refs.lines().any(|r| r == STATE_REF));
    assert_fsck_clean(&repo);
}

#[test]
fn history_is_one_commit_per_batch_on_a_shared_root() {
    let (dir, repo) = fresh_repo();
    let store = OrphanBranchStore::open(&repo).unwrap();
    assert_eq!(store.tip().unwrap(), None);
    store.write("decisions.md", b"# Decisions\n").unwrap();
    store.append("decisions.md", b"- one\n").unwrap();
    store.delete("missing.md").unwrap(); // no change, no commit
    store
        .apply(&[
            StateEdit::append("decisions.md", "- two\n"),
            StateEdit::append("ledger/promoted", "id-2\n"),
        ])
        .unwrap();
    store.delete("decisions.md").unwrap();
    let log = git(&repo, &["log", "--format=%s|%an <%ae>|%P", "squad-state"]);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 5, "{log}");
    assert!(lines[0].starts_with("Delete decisions.md|Repo User <repo-user@example.invalid>|"));
    assert!(lines[1].starts_with("Update 2 keys|"));
    assert!(lines[2].starts_with("Append to decisions.md|"));
    assert!(lines[3].starts_with("Update decisions.md|"));
    assert!(
        lines[4].starts_with("Initialize squad-state branch|squad <squad@localhost>|"),
        "{}",
        lines[4]
    );
    assert!(lines[4].ends_with('|'), "the root commit has no parent");
    let body = git(
        &repo,
        &["log", "-1", "--skip=1", "--format=%B", "squad-state"],
    );
    assert_eq!(
        body,
        "Update 2 keys\n\nAppend to decisions.md\nAppend to ledger/promoted\n\n"
    );
    // The ledger survived the delete of decisions.md.
    assert_eq!(store.list("").unwrap(), ["ledger/promoted"]);
    // A second repository creating the branch on its own gets the same root commit.
    let other = repo_with_commit(&dir.path().join("other"));
    OrphanBranchStore::open(&other)
        .unwrap()
        .write("x", b"y")
        .unwrap();
    let root = |r: &Path| git(r, &["rev-list", "--max-parents=0", "squad-state"]);
    assert_eq!(root(&repo), root(&other));
    // The tip reported by the store is the branch tip.
    assert_eq!(
        store.tip().unwrap().unwrap(),
        git(&repo, &["rev-parse", "squad-state"]).trim()
    );
}

#[test]
fn out_of_band_advance_is_rebuilt_upon() {
    let (_dir, repo) = fresh_repo();
    let store = OrphanBranchStore::open(&repo).unwrap();
    store.write("decisions.md", b"- ours\n").unwrap();
    // Someone else (plain git) commits on the state branch.
    let blob = {
        let mut cmd = crate::state_git::git_cmd(&repo);
        cmd.args(["hash-object", "-w", "--stdin"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write as _;
        child.stdin.take().unwrap().write_all(b"theirs\n").unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    git(
        &repo,
        &["read-tree", "--index-output=.git/tmp-index", "squad-state"],
    );
    let tree = {
        let out = crate::state_git::git_cmd(&repo)
            .env("GIT_INDEX_FILE", ".git/tmp-index")
            .args([
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("100644,{blob},theirs.md"),
            ])
            .output()
            .unwrap();
        assert!(out.status.success());
        let out = crate::state_git::git_cmd(&repo)
            .env("GIT_INDEX_FILE", ".git/tmp-index")
            .args(["write-tree"])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let old = git(&repo, &["rev-parse", "squad-state"]).trim().to_owned();
    let theirs = git(&repo, &["commit-tree", &tree, "-p", &old, "-m", "theirs"])
        .trim()
        .to_owned();
    git(&repo, &["update-ref", STATE_REF, &theirs, &old]);

    store.append("decisions.md", b"- more\n").unwrap();
    assert_eq!(store.list("").unwrap(), ["decisions.md", "theirs.md"]);
    assert_eq!(
        git(&repo, &["rev-parse", "squad-state~1"]).trim(),
        theirs,
        "the write was built on the advanced tip"
    );
    assert_eq!(
        store.read("decisions.md").unwrap().as_deref(),
        Some(&b"- ours\n- more\n"[..])
    );
}

#[test]
fn a_ref_whose_lock_a_live_writer_holds_ends_in_a_conflict_error() {
    let (_dir, repo) = fresh_repo();
    let store = OrphanBranchStore::open(&repo).unwrap().with_max_attempts(3);
    store.write("a", b"1").unwrap();
    let tip = git(&repo, &["rev-parse", "squad-state"]);
    // Another writer holds the ref's lock (a live process keeps it open) and never lets go.
    let lock = repo.join(".git/refs/heads/squad-state.lock");
    let mut holder = std::process::Command::new("sh")
        .arg("-c")
        .arg("exec 3>\"$0\"; echo held; sleep 30")
        .arg(&lock)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let err = store.append("a", b"2").unwrap_err();
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(
        err.kind(),
        ErrorKind::Conflict,
        "{}",
        crate::common::with_sources(&err)
    );
    assert!(err.is_retryable());
    assert!(
        err.to_string().contains("gave up after 3 attempts"),
        "{err}"
    );
    assert_eq!(
        git(&repo, &["rev-parse", "squad-state"]),
        tip,
        "ref unchanged"
    );
    std::fs::remove_file(&lock).unwrap();
    store.append("a", b"2").unwrap();
    assert_eq!(store.read("a").unwrap().as_deref(), Some(&b"12"[..]));
}

/// A lock file left by a killed process (nobody holds it) is not a race: the write fails at
/// once, naming the file, instead of retrying (issue 14: 13 minutes before).
#[test]
fn a_left_over_lock_fails_at_once_naming_the_file() {
    let (_dir, repo) = fresh_repo();
    // Many attempts: a retry loop would take minutes.
    let store = OrphanBranchStore::open(&repo)
        .unwrap()
        .with_max_attempts(10_000);
    store.write("a", b"1").unwrap();
    let tip = git(&repo, &["rev-parse", "squad-state"]);
    for name in ["refs/heads/squad-state.lock", "packed-refs.lock"] {
        git(&repo, &["pack-refs", "--all"]);
        let lock = repo.join(".git").join(name);
        std::fs::write(&lock, "").unwrap();
        let err = store.append("a", b"2").unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::Locked,
            "{name}: {}",
            crate::common::with_sources(&err)
        );
        assert!(!err.is_retryable() && !err.is_user_error());
        assert_eq!(
            err.path().map(|p| p.canonicalize().unwrap()),
            Some(lock.canonicalize().unwrap())
        );
        assert!(
            err.to_string()
                .contains(&name.replace('/', std::path::MAIN_SEPARATOR_STR)),
            "{err}"
        );
        assert_eq!(git(&repo, &["rev-parse", "squad-state"]), tip);
        let stale = squad_notes::health::stale_locks(&repo).unwrap();
        assert_eq!(stale.len(), 1, "{stale:?}");
        std::fs::remove_file(&lock).unwrap();
        assert!(squad_notes::health::stale_locks(&repo).unwrap().is_empty());
    }
    store.append("a", b"2").unwrap();
    assert_eq!(store.read("a").unwrap().as_deref(), Some(&b"12"[..]));
}

#[test]
fn works_in_a_bare_repository_and_with_another_ref() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("bare.git");
    git(
        dir.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    configure(&bare);
    let store = OrphanBranchStore::open(&bare)
        .unwrap()
        .with_ref("refs/squad/state")
        .unwrap();
    assert_eq!(store.ref_name(), "refs/squad/state");
    store.write("decisions.md", b"bare\n").unwrap();
    assert_eq!(
        git(&bare, &["show", "refs/squad/state:decisions.md"]),
        "bare\n"
    );
    assert_fsck_clean(&bare);
}

#[test]
fn bad_refs_and_paths_are_refused() {
    let (dir, repo) = fresh_repo();
    for bad in [
        "refs/notes/squad",
        "refs/notes/squad/state",
        "heads/squad-state",
        "refs/heads/bad..name",
        "refs/heads/with space",
        "",
    ] {
        let err = OrphanBranchStore::open(&repo)
            .unwrap()
            .with_ref(bad)
            .unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::InvalidInput,
            "ref {bad:?}: {}",
            crate::common::with_sources(&err)
        );
    }
    let err = OrphanBranchStore::open(dir.path().join("nowhere")).unwrap_err();
    assert_eq!(
        err.kind(),
        ErrorKind::NotFound,
        "{}",
        crate::common::with_sources(&err)
    );
}

#[test]
fn a_ref_in_the_way_is_a_backend_error_not_a_race() {
    let (_dir, repo) = fresh_repo();
    // A ref below the state ref's name makes `refs/heads/squad-state` impossible to create.
    git(&repo, &["update-ref", "refs/heads/squad-state/x", "HEAD"]);
    let store = OrphanBranchStore::open(&repo).unwrap();
    let err = store.write("a", b"1").unwrap_err();
    // Not `Conflict`: nobody raced us, so retrying cannot help.
    assert_eq!(
        err.kind(),
        ErrorKind::Backend,
        "{}",
        crate::common::with_sources(&err)
    );
    assert_eq!(err.to_string(), "cannot update refs/heads/squad-state");
    assert_eq!(store.read("a").unwrap(), None);
}

/// Appends `APPENDS_PER_PROCESS` tagged lines to `log.md` through the orphan store, then checks
/// that its own lines are all there, in order. Run directly, it works on a fresh repository;
/// `appends_from_several_processes_lose_nothing` runs it as a child process on a shared one.
const APPENDS_PER_PROCESS: usize = 40;

#[test]
fn appender_process() {
    let fresh;
    let repo = match std::env::var_os("SQUAD_TEST_APPEND_REPO") {
        Some(path) => std::path::PathBuf::from(path),
        None => {
            fresh = fresh_repo();
            fresh.1.clone()
        }
    };
    let tag = std::env::var("SQUAD_TEST_APPEND_TAG").unwrap_or_else(|_| "solo".into());
    let store = OrphanBranchStore::open(&repo).unwrap();
    for i in 0..APPENDS_PER_PROCESS {
        store
            .append("log.md", format!("{tag} {i}\n").as_bytes())
            .unwrap();
    }
    let log = String::from_utf8(store.read("log.md").unwrap().unwrap()).unwrap();
    let mine: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with(&format!("{tag} ")))
        .collect();
    let expected: Vec<String> = (0..APPENDS_PER_PROCESS)
        .map(|i| format!("{tag} {i}"))
        .collect();
    assert_eq!(mine, expected);
}

#[test]
fn appends_from_several_processes_lose_nothing() {
    const PROCESSES: usize = 4;
    let (_dir, repo) = fresh_repo();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|p| {
            std::process::Command::new(&exe)
                .args([
                    "state_orphan::appender_process",
                    "--exact",
                    "--test-threads=1",
                    "--quiet",
                ])
                .env("SQUAD_TEST_APPEND_REPO", &repo)
                .env("SQUAD_TEST_APPEND_TAG", format!("process{p}"))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // This process appends too, from two threads.
    std::thread::scope(|scope| {
        for t in 0..2 {
            let repo = &repo;
            scope.spawn(move || {
                let store = OrphanBranchStore::open(repo).unwrap();
                for i in 0..APPENDS_PER_PROCESS {
                    store
                        .append("log.md", format!("thread{t} {i}\n").as_bytes())
                        .unwrap();
                }
            });
        }
    });
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "child appender failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("1 passed"),
            "the child ran the appender: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let store = OrphanBranchStore::open(&repo).unwrap();
    let log = String::from_utf8(store.read("log.md").unwrap().unwrap()).unwrap();
    assert_eq!(log.lines().count(), (PROCESSES + 2) * APPENDS_PER_PROCESS);
    for tag in (0..PROCESSES)
        .map(|p| format!("process{p}"))
        .chain((0..2).map(|t| format!("thread{t}")))
    {
        let mine: Vec<&str> = log
            .lines()
            .filter(|l| l.starts_with(&format!("{tag} ")))
            .collect();
        assert_eq!(mine.len(), APPENDS_PER_PROCESS, "{tag}'s appends");
    }
    assert_fsck_clean(&repo);
}

/// One append to `key` (a top-level key) by plain git plumbing, with git's own compare-and-swap
/// (`update-ref <ref> <new> <old>`). Returns false when the ref moved in between.
fn cli_append_once(repo: &Path, key: &str, line: &str) -> bool {
    use std::io::Write as _;
    let old = git(repo, &["rev-parse", STATE_REF]).trim().to_owned();
    let current = git_output(repo, &["cat-file", "blob", &format!("{old}:{key}")]);
    let mut content = if current.status.success() {
        current.stdout
    } else {
        Vec::new()
    };
    content.extend_from_slice(line.as_bytes());
    let with_stdin = |args: &[&str], input: &[u8]| {
        let mut child = crate::state_git::git_cmd(repo)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let blob = with_stdin(&["hash-object", "-w", "--stdin"], &content);
    let mut listing: Vec<String> = git(repo, &["ls-tree", &old])
        .lines()
        .filter(|l| !l.ends_with(&format!("\t{key}")))
        .map(str::to_owned)
        .collect();
    listing.push(format!("100644 blob {blob}\t{key}"));
    let tree = with_stdin(&["mktree"], format!("{}\n", listing.join("\n")).as_bytes());
    let commit = git(
        repo,
        &["commit-tree", &tree, "-p", &old, "-m", "cli append"],
    )
    .trim()
    .to_owned();
    git_output(repo, &["update-ref", STATE_REF, &commit, &old])
        .status
        .success()
}

#[test]
fn appends_race_an_outside_git_writer_and_nobody_loses() {
    let (_dir, repo) = fresh_repo();
    let store = OrphanBranchStore::open(&repo).unwrap();
    store.write("log.md", b"").unwrap();
    const CLI_LINES: usize = 25;
    const THREADS: usize = 4;
    const PER_THREAD: usize = 25;
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for i in 0..CLI_LINES {
                while !cli_append_once(&repo, "cli.md", &format!("cli {i}\n")) {}
            }
        });
        for t in 0..THREADS {
            let repo = &repo;
            scope.spawn(move || {
                // Each thread with its own handle, as separate processes would have.
                let store = OrphanBranchStore::open(repo).unwrap();
                for i in 0..PER_THREAD {
                    store
                        .append("log.md", format!("t{t} {i}\n").as_bytes())
                        .unwrap();
                }
            });
        }
    });
    let log = String::from_utf8(store.read("log.md").unwrap().unwrap()).unwrap();
    assert_eq!(log.lines().count(), THREADS * PER_THREAD, "{log}");
    let cli = String::from_utf8(store.read("cli.md").unwrap().unwrap()).unwrap();
    let expected: Vec<String> = (0..CLI_LINES).map(|i| format!("cli {i}")).collect();
    assert_eq!(cli.lines().collect::<Vec<_>>(), expected);
    assert_fsck_clean(&repo);
}

#[test]
fn a_batch_can_carry_its_own_commit_message() {
    let (_dir, repo) = fresh_repo();
    let store = OrphanBranchStore::open(&repo).unwrap();
    store
        .apply_with_message(
            &[
                StateEdit::append("decisions.md", "- promoted\n"),
                StateEdit::append("ledger/promoted", "id-1\n"),
            ],
            "Promote 1 decision",
        )
        .unwrap();
    assert_eq!(
        git(&repo, &["log", "-1", "--format=%B", "squad-state"]),
        "Promote 1 decision\n\n"
    );
    let tip = store.tip().unwrap();
    for bad in ["", "  \n\t"] {
        let err = store
            .apply_with_message(&[StateEdit::append("decisions.md", "x")], bad)
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "message {bad:?}");
    }
    assert_eq!(store.tip().unwrap(), tip, "refused batches commit nothing");
}

/// One identical first append, run as a child process by
/// `identical_first_appends_from_several_processes_all_land`.
#[test]
fn identical_first_append_process() {
    let Some(repo) = std::env::var_os("SQUAD_TEST_DUP_REPO") else {
        // Run directly: one process on a fresh repository, its line lands.
        let (_dir, repo) = fresh_repo();
        let store = OrphanBranchStore::open(&repo).unwrap();
        store.append("dup.md", b"same line\n").unwrap();
        assert_eq!(store.read("dup.md").unwrap().unwrap(), b"same line\n");
        return;
    };
    let store = OrphanBranchStore::open(std::path::Path::new(&repo)).unwrap();
    store.append("dup.md", b"same line\n").unwrap();
}

/// Processes whose first commits on a new branch are byte-identical (same tree, same parent,
/// same second) must still all land: the branch is created at the root first, then every batch
/// moves it with a strict compare-and-swap.
#[test]
fn identical_first_appends_from_several_processes_all_land() {
    const PROCESSES: usize = 6;
    let (_dir, repo) = fresh_repo();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            std::process::Command::new(&exe)
                .args([
                    "state_orphan::identical_first_append_process",
                    "--exact",
                    "--test-threads=1",
                    "--quiet",
                ])
                .env("SQUAD_TEST_DUP_REPO", &repo)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
    }
    let store = OrphanBranchStore::open(&repo).unwrap();
    let text = String::from_utf8(store.read("dup.md").unwrap().unwrap()).unwrap();
    assert_eq!(text.lines().count(), PROCESSES, "{text}");
}
