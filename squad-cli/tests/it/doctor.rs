//! `squad doctor`: what killed processes leave behind is reported, and `--fix` repairs what a
//! machine may repair (stale locks, temporary files) and nothing a human must judge.

use std::process::Output;

use crate::crash_table::age;
use crate::git_repo::{RISK_GATE_REQUEST, Repo};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_healthy_repository_is_exit_0() {
    let repo = Repo::new();
    let o = repo.squad(&["doctor"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(stdout(&o), "all is well\n");
    let v: serde_json::Value =
        serde_json::from_slice(&repo.squad(&["doctor", "--json"]).stdout).unwrap();
    assert_eq!(v["healthy"], true);
}

#[test]
fn a_stale_ref_lock_is_reported_fixed_and_then_writes_work() {
    let repo = Repo::new();
    // A `git update-ref` killed a minute ago left its lock behind.
    let lock = repo.path().join(".git/packed-refs.lock");
    std::fs::write(&lock, "").unwrap();
    age(&lock);
    let write = [
        "notes",
        "write",
        "--agent",
        "data",
        "--type",
        "progress",
        "--content",
        "x",
    ];
    let blocked = repo.squad(&write);
    assert_eq!(blocked.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&blocked.stderr).contains("packed-refs.lock"));

    let o = repo.squad(&["doctor"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("stale lock: ") && stdout(&o).contains("packed-refs.lock"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("squad doctor --fix"));
    assert!(lock.exists(), "doctor without --fix removes nothing");

    let o = repo.squad(&["doctor", "--fix", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0), "{v}");
    assert!(v["fixed"][0].as_str().unwrap().contains("packed-refs.lock"));
    assert!(!lock.exists());
    assert_eq!(repo.squad(&write).status.code(), Some(0));
}

#[test]
fn a_lock_a_live_process_holds_is_never_removed() {
    let repo = Repo::new();
    let lock = repo.path().join(".git/refs/heads/main.lock");
    std::fs::write(&lock, "").unwrap();
    age(&lock);
    // A live process keeps the lock file open, as a running git does.
    let mut holder = std::process::Command::new("sh")
        .arg("-c")
        .arg("exec 3<\"$0\"; echo ready; sleep 30")
        .arg(&lock)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Doctor looks only once the holder says it has the lock open: a fixed sleep raced on a
    // loaded machine.
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut ready,
    )
    .unwrap();
    assert_eq!(ready.trim(), "ready");
    let o = repo.squad(&["doctor", "--fix"]);
    holder.kill().unwrap();
    let _ = holder.wait();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(lock.exists(), "a held lock must stay");
}

#[test]
fn temporary_files_of_dead_writers_are_removed_symlinks_only_reported() {
    let repo = Repo::new();
    let hot = repo.path().join(".squad/memory/hot");
    std::fs::create_dir_all(&hot).unwrap();
    let temp = hot.join(".data.md.tmp-999999999-0");
    std::fs::write(&temp, "half a file").unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::os::unix::fs::symlink(outside.path(), hot.join("worf.md")).unwrap();

    let o = repo.squad(&["doctor"]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(
        text.contains("temporary file: memory/hot/.data.md.tmp-999999999-0"),
        "{text}"
    );
    assert!(
        text.contains("memory/hot/worf.md is a symbolic link"),
        "{text}"
    );

    let o = repo.squad(&["doctor", "--fix"]);
    // The symlink is left for a human: still exit 1, and no --fix hint for it.
    assert_eq!(o.status.code(), Some(1));
    assert!(!temp.exists());
    assert!(hot.join("worf.md").symlink_metadata().unwrap().is_symlink());
    let o = repo.squad(&["doctor"]);
    assert!(!stdout(&o).contains("--fix"), "{}", stdout(&o));
}

#[test]
fn a_linked_state_json_is_named_once_and_approval_points_to_doctor() {
    let repo = Repo::new();
    let squad = repo.path().join(".squad");
    std::fs::create_dir_all(&squad).unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(outside.path(), "{}").unwrap();
    std::os::unix::fs::symlink(outside.path(), squad.join("state.json")).unwrap();

    let o = repo.squad(&["approval", "status"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("state.json is a symbolic link"), "{err}");
    assert!(err.contains("`squad doctor`"), "{err}");

    let o = repo.squad(&["doctor"]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("state.json")).collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(lines[0].contains("is a symbolic link to"), "{text}");
    assert_eq!(std::fs::read_to_string(outside.path()).unwrap(), "{}");
}

#[test]
fn a_tampered_log_stays_until_acknowledged() {
    let repo = Repo::new();
    let req = RISK_GATE_REQUEST;
    assert_eq!(
        repo.squad(&["approval", "configure", "--channel", "in-chat"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(repo.squad(&req).status.code(), Some(0));
    let log = repo.path().join(".squad/notifications.md");
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(
        &log,
        text.replace("Drop", "Keep")
            .replace("risk-gate", "risk-gat3"),
    )
    .unwrap();
    for args in [vec!["doctor"], vec!["doctor", "--fix"]] {
        let o = repo.squad(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(
            stdout(&o).contains("tampered: "),
            "{args:?}: {}",
            stdout(&o)
        );
        assert!(stdout(&o).contains("acknowledge-tamper"), "{}", stdout(&o));
    }
    assert!(
        std::fs::read_to_string(&log).unwrap().contains("risk-gat3"),
        "the log is never rewritten"
    );
}

/// Every command that updates a ref or git's configuration, blocked by a lock file a killed
/// process left, fails naming the file and saying how to clear it (issue 14: `notes setup`
/// passed git's bare failure on, `notes promote` and `notes archive` gave no hint); after
/// `squad doctor --fix`, the same command works.
#[test]
fn every_writer_blocked_by_a_left_over_lock_names_it_and_says_how_to_clear_it() {
    let repo = Repo::new();
    repo.git(&["config", "squad.defaultBranch", "main"]);
    repo.git(&["remote", "add", "origin", "/nowhere/remote.git"]);
    let write = [
        "notes",
        "write",
        "--agent",
        "data",
        "--type",
        "decision",
        "--fields",
        r#"{"decision":"d","reasoning":"r","confidence":"high"}"#,
        "--promote",
        "--archive",
    ];
    assert_eq!(repo.squad(&write).status.code(), Some(0));
    // A closed branch with an entry to archive.
    repo.git(&["checkout", "-q", "-b", "spike"]);
    repo.git(&["commit", "-q", "--allow-empty", "-m", "spike"]);
    assert_eq!(repo.squad(&write).status.code(), Some(0));
    repo.git(&["checkout", "-q", "main"]);
    let cases: [(&str, &[&str]); 3] = [
        (".git/config.lock", &["notes", "setup"]),
        (
            ".git/refs/heads/squad-state.lock",
            &["notes", "promote", "--offline"],
        ),
        (
            ".git/refs/heads/squad-state.lock",
            &["notes", "archive", "--closed", "spike"],
        ),
    ];
    for (lock, args) in cases {
        let lock = repo.path().join(lock);
        std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
        std::fs::write(&lock, "").unwrap();
        age(&lock);
        let o = repo.squad(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        let name = lock.file_name().unwrap().to_string_lossy();
        let lines: Vec<&str> = err.lines().collect();
        assert!(
            lines.len() == 2 && lines[0].starts_with("error: ") && lines[0].contains(&*name),
            "{args:?}: {err}"
        );
        assert!(
            lines[1].starts_with("hint: ")
                && lines[1].contains("rm '")
                && lines[1].contains("squad doctor --fix"),
            "{args:?}: {err}"
        );
        assert_eq!(repo.squad(&["doctor", "--fix"]).status.code(), Some(0));
        assert!(!lock.exists());
        let o = repo.squad(args);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// Runs `squad -C <dir> <args>` under strace, killed (SIGKILL) when it, or a git it runs,
/// renames the lock file `lock` over its ref: the lock file stays behind, fresh. `None` when
/// strace does not work here (see `crash_table::available`).
fn killed_at_lock_rename(
    isolate: impl Fn(&mut std::process::Command),
    dir: &std::path::Path,
    lock: &std::path::Path,
    args: &[&str],
) -> Option<Output> {
    if !crate::crash_table::available() {
        return None;
    }
    let mut c = std::process::Command::new("strace");
    c.args(["-f", "-qq", "-o", "/dev/null", "-P"])
        .arg(lock)
        .args([
            "-e",
            "trace=rename,renameat,renameat2",
            "-e",
            "inject=rename,renameat,renameat2:signal=SIGKILL",
            env!("CARGO_BIN_EXE_squad"),
            "-C",
        ])
        .arg(dir)
        .args(args);
    isolate(&mut c);
    let out = c.output().unwrap();
    assert!(
        lock.exists(),
        "the kill left no {}: {out:?}",
        lock.display()
    );
    Some(out)
}

/// After a kill that left `lock`: `doctor` reports it at once, however young (exit 1), and
/// `doctor --fix`, run at once, clears it (waiting out its youth) so that `rerun` works.
#[track_caller]
fn hint_followed_at_once_works(
    run: &dyn Fn(&[&str]) -> Output,
    lock: &std::path::Path,
    rerun: &[&str],
) {
    let name = lock.file_name().unwrap().to_string_lossy().into_owned();
    let o = run(&["doctor"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains(&name), "{}", stdout(&o));
    assert!(stdout(&o).contains("squad doctor --fix"), "{}", stdout(&o));
    let o = run(&["doctor", "--fix"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(!lock.exists(), "{}", stdout(&o));
    let o = run(rerun);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{rerun:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = run(&["doctor"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

/// After a kill that left `lock`: the rerun fails fast naming it with a hint; the hint,
/// followed, works.
#[track_caller]
fn rerun_then_hint_works(run: &dyn Fn(&[&str]) -> Output, lock: &std::path::Path, rerun: &[&str]) {
    let started = std::time::Instant::now();
    let o = run(rerun);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{rerun:?}: {err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{err}"
    );
    assert!(
        err.contains(&*lock.file_name().unwrap().to_string_lossy())
            && err.contains("hint: ")
            && err.contains("squad doctor --fix"),
        "{err}"
    );
    let o = run(&["doctor", "--fix"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = run(rerun);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{rerun:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Issue 25, young locks: a `notes write` and a `notes promote` killed while their ref lock is
/// held leave it fresh; `doctor` reports it at once and `doctor --fix` clears it at once, and
/// the rerun's own hint works too.
#[test]
fn a_young_lock_left_by_a_killed_write_or_promote_is_reported_and_cleared_at_once() {
    let write: [&str; 8] = [
        "notes",
        "write",
        "--agent",
        "data",
        "--type",
        "decision",
        "--fields",
        r#"{"decision":"d","reasoning":"r","confidence":"high"}"#,
    ];
    let promote: [&str; 3] = ["notes", "promote", "--offline"];
    for follow_hint_first in [true, false] {
        for (ref_lock, args) in [
            (".git/refs/notes/squad/data.lock", &write[..]),
            (".git/refs/heads/squad-state.lock", &promote[..]),
        ] {
            let repo = Repo::new();
            repo.git(&["config", "squad.defaultBranch", "main"]);
            // The first write creates the namespace; promote needs an entry to promote.
            assert_eq!(repo.squad(&write).status.code(), Some(0));
            let lock = repo.path().join(ref_lock);
            let Some(_) = killed_at_lock_rename(|c| repo.env(c), repo.path(), &lock, args) else {
                return;
            };
            let run = |a: &[&str]| repo.squad(a);
            if follow_hint_first {
                hint_followed_at_once_works(&run, &lock, args);
            } else {
                rerun_then_hint_works(&run, &lock, args);
            }
        }
    }
}

/// Issue 25, young locks: a `notes sync` whose git fetch is killed while it holds the lock of
/// a remote-tracking notes ref: the same two ways out work.
#[test]
fn a_young_lock_left_by_a_killed_sync_is_reported_and_cleared_at_once() {
    for follow_hint_first in [true, false] {
        let w = crate::git_repo::Clones::new("sync");
        let (a, b) = (w.path("a"), w.path("b"));
        w.ok(
            &b,
            &[
                "notes",
                "write",
                "--agent",
                "data",
                "--type",
                "progress",
                "--content",
                "b",
            ],
            None,
        );
        w.ok(&b, &["notes", "sync"], None);
        let lock = a.join(".git/refs/notes/remotes/origin/squad/data.lock");
        std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
        let Some(_) = killed_at_lock_rename(|c| w.env(c), &a, &lock, &["notes", "sync"]) else {
            return;
        };
        let run = |args: &[&str]| w.squad(&a, args, None);
        if follow_hint_first {
            hint_followed_at_once_works(&run, &lock, &["notes", "sync"]);
        } else {
            rerun_then_hint_works(&run, &lock, &["notes", "sync"]);
        }
    }
}

/// Issue 25: a bare repository is a repository (doctor looks at its locks); a `--state-dir`
/// that does not exist is an error, not "all is well".
#[test]
fn bare_repositories_and_a_missing_state_dir() {
    let repo = Repo::new();
    let bare = repo.path().join("bare.git");
    repo.git(&["clone", "-q", "--bare", ".", bare.to_str().unwrap()]);
    let run = |dir: &std::path::Path, args: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_squad"));
        c.arg("-C").arg(dir).args(args);
        repo.env(&mut c);
        c.output().unwrap()
    };
    let o = run(&bare, &["doctor"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(stdout(&o), "all is well\n");
    let lock = bare.join("packed-refs.lock");
    std::fs::write(&lock, "").unwrap();
    age(&lock);
    let o = run(&bare, &["doctor"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("packed-refs.lock"), "{}", stdout(&o));
    assert_eq!(run(&bare, &["doctor", "--fix"]).status.code(), Some(0));
    assert!(!lock.exists());
    // Notes live in a bare repository too.
    let o = run(
        &bare,
        &[
            "notes",
            "write",
            "--agent",
            "data",
            "--type",
            "progress",
            "--content",
            "x",
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // State needs a work tree: said so, not "not a git repository".
    let o = run(&bare, &["approval", "status"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bare git repository") && !err.contains("not a git repository"),
        "{err}"
    );
    // Bad input tried: a --state-dir that does not exist, in a work tree and in a bare repository.
    for dir in [repo.path(), bare.as_path()] {
        let o = run(dir, &["--state-dir", "no-such-dir", "doctor"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("no-such-dir") && err.contains("does not exist"),
            "{err}"
        );
        assert!(stdout(&o).is_empty());
    }
}

/// Issue 25: a lock file a killed `git receive-pack` left in a remote on this machine blocked
/// every sync for 30 rounds with "other clones kept pushing". Now the sync fails fast naming
/// the remote's lock file, doctor reports it, and `doctor --fix` clears it.
#[test]
fn a_left_over_lock_in_a_local_remote_is_named_reported_and_cleared() {
    let w = crate::git_repo::Clones::new("remote-lock");
    let a = w.path("a");
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
        ],
        None,
    );
    let lock = w.path("remote.git/refs/notes/squad/data.lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    std::fs::write(&lock, "").unwrap();
    age(&lock);
    let started = std::time::Instant::now();
    let o = w.squad(&a, &["notes", "sync"], None);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{err}"
    );
    assert!(
        err.contains("remote.git/refs/notes/squad/data.lock")
            && err.contains("left over")
            && err.contains("squad doctor --fix"),
        "{err}"
    );
    let o = w.squad(&a, &["doctor"], None);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("data.lock"), "{}", stdout(&o));
    assert_eq!(
        w.squad(&a, &["doctor", "--fix"], None).status.code(),
        Some(0)
    );
    assert!(!lock.exists());
    w.ok(&a, &["notes", "sync"], None);
    assert_eq!(w.squad(&a, &["doctor"], None).status.code(), Some(0));
}

#[test]
fn a_missing_or_stale_memory_index_is_named_but_healthy() {
    let repo = Repo::new();
    let cold = repo.path().join(".squad/memory/cold");
    std::fs::create_dir_all(&cold).unwrap();
    // Written by hand: no search index.
    std::fs::write(
        cold.join("data.md"),
        "### 2026-11-20: note: by hand\nText.\n",
    )
    .unwrap();
    let o = repo.squad(&["doctor"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(
        stdout(&o),
        "stale index: memory/.index/cold/data.idx (missing or out of date for \
         memory/cold/data.md; a spawn reads the text instead, which is slower: run 'squad \
         memory index')\nall is well\n"
    );
    let v: serde_json::Value =
        serde_json::from_slice(&repo.squad(&["doctor", "--json"]).stdout).unwrap();
    assert_eq!(v["healthy"], true, "{v}");
    assert_eq!(
        v["stale_indexes"],
        serde_json::json!([{"path": "memory/.index/cold/data.idx", "file": "memory/cold/data.md"}])
    );
    assert_eq!(repo.squad(&["memory", "index"]).status.code(), Some(0));
    assert_eq!(stdout(&repo.squad(&["doctor"])), "all is well\n");
}
