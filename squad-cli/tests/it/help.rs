//! Every command documents itself: `--help` shows an example, and the top level lists the exit codes.

use std::process::Command;

const COMMANDS: &[&[&str]] = &[
    &["schema"],
    &["notes"],
    &["notes", "write"],
    &["notes", "show"],
    &["notes", "list"],
    &["notes", "setup"],
    &["notes", "sync"],
    &["notes", "promote"],
    &["notes", "archive"],
    &["approval"],
    &["approval", "configure"],
    &["approval", "request"],
    &["approval", "status"],
    &["approval", "wait"],
    &["memory"],
    &["memory", "spawn"],
    &["memory", "scribe"],
    &["memory", "validate"],
    &["route"],
    &["route", "replay"],
    &["route", "briefing"],
    &["route", "migrate"],
    &["mcp"],
];

#[test]
fn every_command_has_help_with_an_example() {
    let mut missing = Vec::new();
    for cmd in COMMANDS {
        let out = Command::new(env!("CARGO_BIN_EXE_squad"))
            .args(*cmd)
            .arg("--help")
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        if out.status.code() != Some(0) || !text.contains("Example") {
            missing.push(cmd.join(" "));
        }
    }
    assert!(missing.is_empty(), "no example in --help of: {missing:?}");
}

#[test]
fn top_level_help_documents_every_exit_code() {
    let out = Command::new(env!("CARGO_BIN_EXE_squad"))
        .arg("--help")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for code in [
        "0  success",
        "1  failure",
        "2  bad usage",
        "3 changes requested",
        "4 stopped",
        "5 still pending",
        "6 expired",
    ] {
        assert!(text.contains(code), "{code:?} missing from:\n{text}");
    }
}

#[test]
fn completions_for_every_shell_and_the_man_page() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_squad"))
            .args(["completions", shell])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        // Every shell's script names the subcommands.
        for sub in ["notes", "memory", "approval", "route"] {
            assert!(script.contains(sub), "{shell}: {sub}");
        }
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_squad"))
        .arg("man")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".TH squad 1"), "{page}");
    assert!(page.contains("completions"), "{page}");
    // A typo in the shell gets a suggestion.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_squad"))
        .args(["completions", "bsh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr).unwrap().contains("'bash'"));
}
