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
    assert!(err.starts_with("error: unknown schema \"nope\""), "{err}");
    assert!(out.stdout.is_empty());
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
