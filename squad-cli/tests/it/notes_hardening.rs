//! The notes findings of the hardening review (issue 14) and the input conventions of issue 19,
//! each against the real binary and real git repositories.

use std::process::Output;

use serde_json::Value;

use crate::git_repo::{Clones, Repo, run_with_stdin};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A lock file left by a process killed inside a ref update: `notes write` fails at once (it
/// used to spin for 3 min 44 s), exit 1, naming the file and how to clear it; so does
/// `notes promote` on `squad-state.lock` (13 min before).
#[test]
fn a_left_over_lock_fails_fast_naming_the_file() {
    let repo = Repo::new();
    let write = |content: &str| {
        repo.squad(&[
            "notes",
            "write",
            "--agent",
            "data",
            "--type",
            "progress",
            "--content",
            content,
        ])
    };
    assert_eq!(write("first").status.code(), Some(0));
    let tip = repo.tip("data");
    for lock in [".git/refs/notes/squad/data.lock", ".git/packed-refs.lock"] {
        repo.git(&["pack-refs", "--all"]);
        let path = repo.path().join(lock);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "").unwrap();
        let started = std::time::Instant::now();
        let out = write("blocked");
        // A generous bound: the defect took minutes; git itself fails at once.
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{lock}"
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{lock}: {err}");
        let name = std::path::Path::new(lock)
            .file_name()
            .unwrap()
            .to_str()
            .unwrap();
        assert!(err.starts_with("error: ") && err.contains(name), "{err}");
        assert!(err.contains("hint: ") && err.contains("rm '"), "{err}");
        assert_eq!(err.lines().count(), 2, "{err}");
        assert_eq!(repo.tip("data"), tip);
        std::fs::remove_file(&path).unwrap();
    }
    assert_eq!(write("after").status.code(), Some(0));

    // Promotion into squad-state behind a left-over lock.
    repo.git(&["config", "squad.defaultBranch", "main"]);
    let out = repo.squad(&[
        "notes",
        "write",
        "--agent",
        "data",
        "--type",
        "decision",
        "--content",
        "d",
        "--promote",
    ]);
    assert_eq!(out.status.code(), Some(0));
    std::fs::create_dir_all(repo.path().join(".git/refs/heads")).unwrap();
    let lock = repo.path().join(".git/refs/heads/squad-state.lock");
    std::fs::write(&lock, "").unwrap();
    let started = std::time::Instant::now();
    let out = repo.squad(&["notes", "promote", "--offline"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("squad-state.lock"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_file(&lock).unwrap();
    let out = repo.squad(&["notes", "promote", "--offline", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Entries are append-only: `--fields '{"id":"<existing>"}'` used to replace the entry
/// silently. Now: other bytes are exit 2 naming `supersedes`; `--id` makes a retry a no-op.
#[test]
fn entries_are_append_only_and_an_explicit_id_makes_retries_safe() {
    let repo = Repo::new();
    let id = "01J5ZZZZZZZZZZZZZZZZZZZZZZ";
    let write = |extra: &[&str]| {
        let mut args = vec!["notes", "write", "--agent", "data", "--type", "decision"];
        args.extend_from_slice(extra);
        repo.squad(&args)
    };
    let same = [
        "--id",
        id,
        "--fields",
        r#"{"decision":"Use JWT"}"#,
        "--promote",
    ];
    let first = write(&same);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(stdout(&first).trim(), id);
    let tip = repo.tip("data");
    // The same write again (a retry): exit 0, nothing written.
    let again = write(&same);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(repo.tip("data"), tip);
    // Another entry with that id, through --id or through --fields: refused, nothing written.
    for args in [
        vec!["--id", id, "--fields", r#"{"decision":"Use sessions"}"#],
        vec![
            "--fields",
            &format!(r#"{{"id":"{id}","decision":"Use sessions"}}"#),
        ],
    ] {
        let out = write(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("supersedes") && err.contains(id), "{err}");
        assert_eq!(repo.tip("data"), tip);
    }
    let shown = repo.squad(&["--json", "notes", "show", "--agent", "data"]);
    let shown: Vec<Value> = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0]["decision"], "Use JWT");
    // --help says how to make a retry safe.
    let help = repo.squad(&["notes", "write", "--help"]);
    assert!(stdout(&help).contains("--id"), "{}", stdout(&help));
    assert!(stdout(&help).contains("Retries:"));
    // A bad --id, or one that contradicts --fields: exit 2.
    for args in [
        vec!["--id", "not-an-id", "--content", "x"],
        vec![
            "--id",
            id,
            "--fields",
            r#"{"id":"01J5YYYYYYYYYYYYYYYYYYYYYY"}"#,
        ],
    ] {
        assert_eq!(write(&args).status.code(), Some(2), "{args:?}");
    }
}

/// `--fields` and `--content` take `@file` and `-` (stdin); errors name the file.
#[test]
fn fields_and_content_read_files_and_stdin() {
    let repo = Repo::new();
    std::fs::write(
        repo.path().join("fields.json"),
        r#"{"decision":"From a file"}"#,
    )
    .unwrap();
    std::fs::write(repo.path().join("report.md"), "line one\nline two\n").unwrap();
    let run = |args: &[&str], stdin: Option<&str>| {
        let mut all = vec![
            "--json", "notes", "write", "--agent", "data", "--type", "decision",
        ];
        all.extend_from_slice(args);
        run_with_stdin(&mut repo.command(&all), stdin)
    };
    let out = run(&["--fields", "@fields.json"], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["decision"],
        "From a file"
    );
    let out = run(&["--content", "@report.md"], None);
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["content"],
        "line one\nline two\n"
    );
    let out = run(&["--fields", "-"], Some(r#"{"decision":"From stdin"}"#));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["decision"],
        "From stdin"
    );
    let out = run(&["--content", "-"], Some("piped text"));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["content"],
        "piped text"
    );
    let tip = repo.tip("data");
    let out = run(&["--fields", "@missing.json"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--fields: cannot read") && stderr(&out).contains("missing.json"),
        "{}",
        stderr(&out)
    );
    std::fs::write(repo.path().join("bad.bin"), [0xff, 0xfe]).unwrap();
    let out = run(&["--content", "@bad.bin"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("bad.bin is not valid UTF-8"),
        "{}",
        stderr(&out)
    );
    // An endless file is cut at the bound, not read into memory until it runs out.
    let out = run(&["--fields", "@/dev/zero"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--fields: /dev/zero is larger than 16777216 bytes"),
        "{}",
        stderr(&out)
    );
    let out = run(&["--fields", "-"], Some("{not json"));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--fields is not valid JSON"));
    assert_eq!(repo.tip("data"), tip);
}

/// `notes setup` keeps the user's own refspecs (it used to delete `refs/notes/*:refs/notes/*`),
/// reports them, configures the state branch and git's notes rewrite support, and `--dry-run`
/// changes nothing.
#[test]
fn setup_keeps_user_refspecs_and_dry_run_changes_nothing() {
    let repo = Repo::new();
    repo.git(&["remote", "add", "origin", "/nowhere/remote.git"]);
    // A single-branch clone's refspec (does not fetch squad-state) and the seed's notes refspec.
    repo.git(&[
        "config",
        "--replace-all",
        "remote.origin.fetch",
        "+refs/heads/main:refs/remotes/origin/main",
    ]);
    repo.git(&[
        "config",
        "--add",
        "remote.origin.fetch",
        "refs/notes/*:refs/notes/*",
    ]);
    repo.git(&["config", "notes.rewriteMode", "overwrite"]);
    let config = || std::fs::read(repo.path().join(".git/config")).unwrap();
    let before = config();
    let out = repo.squad(&["--json", "notes", "setup", "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(config(), before, "a dry run writes nothing");
    assert_eq!(plan["dry_run"], true);
    assert_eq!(
        plan["kept"],
        serde_json::json!(["refs/notes/*:refs/notes/*"])
    );
    assert_eq!(plan["removed"], serde_json::json!([]));
    let out = repo.squad(&["notes", "setup"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("kept remote.origin.fetch refs/notes/*:refs/notes/* (yours)"));
    assert!(stderr(&out).starts_with("warning: "), "{}", stderr(&out));
    assert_eq!(
        repo.git(&["config", "--get-all", "remote.origin.fetch"]),
        "+refs/heads/main:refs/remotes/origin/main\n\
         refs/notes/*:refs/notes/*\n\
         +refs/notes/squad/*:refs/notes/remotes/origin/squad/*\n\
         +refs/heads/squad-state*:refs/remotes/origin/squad-state*\n"
    );
    assert_eq!(
        repo.git(&["config", "--get-all", "notes.rewriteRef"]),
        "refs/notes/squad/*\n"
    );
    assert_eq!(repo.git(&["config", "notes.rewriteMode"]), "concatenate\n");
    assert_eq!(repo.git(&["config", "notes.rewrite.amend"]), "true\n");
    assert_eq!(repo.git(&["config", "notes.rewrite.rebase"]), "true\n");
    // Idempotent.
    let after = config();
    let out = repo.squad(&["--json", "notes", "setup"]);
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["added"], serde_json::json!([]));
    assert_eq!(again["config"], serde_json::json!([]));
    assert_eq!(config(), after);
}

/// A remote that exists but cannot be reached is a failure with git's reason (exit 1), not bad
/// usage (it was exit 2 with "add it with: git remote add"); credentials in its URL never
/// appear in any output.
#[test]
fn an_unreachable_remote_is_exit_1_with_gits_reason_and_no_credentials() {
    let w = Clones::new("first");
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
            "x",
        ],
        None,
    );
    w.git(&a, &["remote", "add", "dead", "/nowhere/at/all.git"]);
    // A closed port on this machine: refused at once, nothing leaves it.
    w.git(
        &a,
        &[
            "remote",
            "add",
            "secret",
            "http://alice:s3cr3t-t0ken@127.0.0.1:9/repo.git",
        ],
    );
    for remote in ["dead", "secret"] {
        for args in [
            vec!["notes", "sync", "--remote", remote],
            vec!["--json", "notes", "sync", "--remote", remote],
            vec!["notes", "promote", "--remote", remote, "--branch", "main"],
        ] {
            let out = w.squad(&a, &args, None);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            assert!(
                err.starts_with("error: ") && err.contains("git failed"),
                "{args:?}: {err}"
            );
            assert!(!err.contains("git remote add"), "{err}");
            for text in [&err, &stdout(&out)] {
                assert!(
                    !text.contains("s3cr3t") && !text.contains("alice"),
                    "{text}"
                );
            }
        }
    }
}
