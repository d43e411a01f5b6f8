use std::process::Command;

fn squad() -> Command {
    Command::new(env!("CARGO_BIN_EXE_squad"))
}

#[test]
fn schema_prints_the_shipped_file() {
    let out = squad().args(["schema", "note-entry"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        squad_model::schema::NOTE_ENTRY_SCHEMA
    );
}

#[test]
fn unknown_schema_is_exit_2_with_a_named_error() {
    let out = squad().args(["schema", "nope", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("error: invalid value 'nope' for '<name>'"),
        "{err}"
    );
    assert!(
        err.contains("note-entry, notify-state, approval-state, trace"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn every_shipped_schema_prints_including_the_trace() {
    for (name, marker) in [
        ("note-entry", "promote_to_permanent"),
        ("notify-state", "approvalChannel"),
        ("approval-state", "pendingGates"),
        ("trace", "schema_version"),
    ] {
        let out = squad().args(["schema", name, "--json"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v.to_string().contains(marker), "{name}");
    }
}

#[test]
fn missing_c_directory_is_exit_2() {
    let out = squad()
        .args(["-C", "/definitely/not/here", "schema", "note-entry"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("no such directory")
    );
}

#[test]
fn help_lists_exit_codes() {
    let out = squad().arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("Exit codes:")
    );
}

#[test]
fn a_closed_stdout_ends_quietly_without_a_backtrace() {
    // The reader of stdout goes away before the command prints.
    let (_, code, err) = crate::git_repo::run_until_reader_leaves(
        squad().args(["schema", "note-entry", "--json"]),
        0,
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("backtrace"), "{err}");
    assert!(matches!(code, Some(0 | 1)), "{code:?}");
}
