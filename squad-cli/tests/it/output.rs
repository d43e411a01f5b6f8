//! The conventions every command shares: output failures never panic, usage errors are one
//! `error:` line plus one `hint:` line, numbers out of range name their range, and commands
//! that need a repository or existing state say so.

use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Output};

use crate::git_repo::{RISK_GATE_REQUEST, Repo, run_until_reader_leaves};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts an error report: exactly one `error:` line and one `hint:` line, no panic.
#[track_caller]
fn assert_one_error_and_hint(out: &Output, code: i32, what: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{what}: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{what}: {err}");
    assert!(lines[0].starts_with("error: "), "{what}: {err}");
    assert!(lines[1].starts_with("hint: "), "{what}: {err}");
}

/// A repository with one note, so that `notes show` and `notes list` have something to print.
fn repo_with_a_note() -> Repo {
    let repo = Repo::new();
    let out = repo.squad(&[
        "notes",
        "write",
        "--agent",
        "data",
        "--type",
        "decision",
        "--fields",
        r#"{"decision":"Use JWT"}"#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    repo
}

#[test]
fn a_full_disk_on_stdout_is_one_error_line_and_exit_1() {
    let repo = repo_with_a_note();
    for args in [
        vec!["notes", "list", "--agent", "data"],
        vec!["notes", "list", "--agent", "data", "--json"],
        vec!["notes", "show", "--agent", "data", "HEAD"],
        vec!["notes", "show", "--agent", "data", "HEAD", "--json"],
        vec!["schema", "note-entry"],
        vec!["--help"],
        vec!["route", "generate", "--squads", "2", "--events", "5"],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = repo.command(&args).stdout(full).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(
            err.lines().collect::<Vec<_>>(),
            ["error: cannot write to stdout: No space left on device (os error 28)"],
            "{args:?}"
        );
    }
}

#[test]
fn a_reader_that_closes_early_is_a_quiet_exit_0() {
    let repo = repo_with_a_note();
    for args in [
        vec!["notes", "show", "--agent", "data", "HEAD"],
        vec!["notes", "list", "--agent", "data", "--json"],
        vec!["schema", "note-entry"],
        vec!["route", "generate", "--squads", "50", "--events", "20000"],
    ] {
        let (_, code, err) = run_until_reader_leaves(&mut repo.command(&args), 1);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert_eq!(err, "", "{args:?}");
    }
}

#[test]
fn usage_errors_are_one_error_line_and_one_hint() {
    let repo = Repo::new();
    for (args, expect_error, expect_hint) in [
        (
            vec!["notes", "lst"],
            "unrecognized subcommand 'lst'",
            "'list'",
        ),
        (
            vec!["notes", "write", "--agnt", "data"],
            "unexpected argument '--agnt'",
            "'--agent'",
        ),
        (
            vec!["notes", "write", "--agent", "data", "--type", "decision"],
            "required arguments were not provided",
            "squad notes write --help",
        ),
        (
            vec!["notes"],
            "'squad notes' needs a subcommand",
            "squad notes --help",
        ),
        (vec![], "requires a subcommand", "squad --help"),
    ] {
        let out = repo.squad(&args);
        assert_one_error_and_hint(&out, 2, &format!("{args:?}"));
        let err = stderr(&out);
        assert!(err.contains(expect_error), "{args:?}: {err}");
        assert!(
            err.lines().nth(1).unwrap().contains(expect_hint),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn negative_and_oversized_numbers_are_out_of_range() {
    let repo = Repo::new();
    for value in ["-1", "0", "300000000000", "31536001"] {
        let mut args = RISK_GATE_REQUEST.to_vec();
        args.extend(["--expires-in", value]);
        let out = repo.squad(&args);
        assert_one_error_and_hint(&out, 2, value);
        let err = stderr(&out);
        assert!(
            err.contains("out of range (1 to 31536000)"),
            "{value}: {err}"
        );
        assert!(err.contains("--expires-in"), "{value}: {err}");
        assert!(
            err.lines()
                .nth(1)
                .unwrap()
                .contains("squad approval request --help")
        );
    }
    assert!(!repo.path().join(".squad/state.json").exists());
}

#[test]
fn a_non_utf8_argument_names_its_flag() {
    let repo = Repo::new();
    let bad = std::ffi::OsStr::from_bytes(b"caf\xe9");
    let mut c = repo.command(&["notes", "write", "--type", "decision", "--agent"]);
    c.arg(bad).args(["--content", "x"]);
    let out = c.output().unwrap();
    assert_one_error_and_hint(&out, 2, "non-utf8 value");
    assert!(stderr(&out).contains("the value of --agent is not valid UTF-8"));

    let mut c = repo.command(&["notes", "write", "--type", "decision", "--content", "x"]);
    c.arg(std::ffi::OsStr::from_bytes(b"--agent=caf\xe9"));
    let out = c.output().unwrap();
    assert!(stderr(&out).contains("the value of --agent is not valid UTF-8"));
}

#[test]
fn outside_a_git_repository_commands_say_so_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["notes", "list", "--agent", "data"],
        vec!["notes", "setup"],
        vec!["notes", "sync"],
        vec!["notes", "promote"],
        vec!["approval", "configure", "--channel", "in-chat"],
        vec!["approval", "status"],
        vec!["memory", "spawn", "--agent", "data"],
        vec!["memory", "scribe", "--agent", "data"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_squad"))
            .current_dir(dir.path())
            .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
            .args(&args)
            .output()
            .unwrap();
        assert_one_error_and_hint(&out, 2, &format!("{args:?}"));
        assert!(
            stderr(&out).contains("not a git repository"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "{args:?}"
        );
    }
}

#[test]
fn a_state_dir_that_does_not_exist_is_an_error_for_readers() {
    let repo = Repo::new();
    for args in [
        vec!["--state-dir", "/does/not/exist", "approval", "status"],
        vec![
            "--state-dir",
            "/does/not/exist",
            "approval",
            "wait",
            "--timeout",
            "0",
        ],
        vec![
            "--state-dir",
            "/does/not/exist",
            "memory",
            "spawn",
            "--agent",
            "data",
        ],
        vec!["--state-dir", "/does/not/exist", "memory", "validate"],
    ] {
        let out = repo.squad(&args);
        assert_one_error_and_hint(&out, 2, &format!("{args:?}"));
        assert!(
            stderr(&out).contains("state directory '/does/not/exist' does not exist"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}
