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
    &["memory", "index"],
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

/// The commands section of a help text: (name, description with its wrapped lines joined).
fn commands_section(help: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut inside = false;
    for line in help.lines() {
        if line == "Commands:" {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if line.trim().is_empty() {
            break;
        }
        let text = line.trim_start();
        let indent = line.len() - text.len();
        if indent == 2 {
            let (name, about) = text.split_once(' ').unwrap_or((text, ""));
            out.push((name.to_owned(), about.trim().to_owned()));
        } else if let Some(last) = out.last_mut() {
            last.1.push(' ');
            last.1.push_str(text);
        }
    }
    out
}

fn help_of(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_squad"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// `squad --help` names every subcommand of each command group in that group's line (so a new
/// subcommand, anywhere, fails this test until the summary lists it).
#[test]
fn the_top_level_summary_names_every_subcommand() {
    let top = commands_section(&help_of(&[]));
    assert!(top.len() >= 8, "{top:?}");
    let mut missing = Vec::new();
    let mut groups = 0;
    for (group, about) in &top {
        if group == "help" {
            continue;
        }
        let subs = commands_section(&help_of(&[group]));
        if subs.is_empty() {
            continue;
        }
        groups += 1;
        let words: Vec<&str> = about
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .collect();
        for (sub, _) in subs.iter().filter(|(s, _)| s != "help") {
            if !words.contains(&sub.as_str()) {
                missing.push(format!("{group} {sub}"));
            }
        }
    }
    assert!(groups >= 4, "{top:?}");
    assert!(
        missing.is_empty(),
        "`squad --help` does not name: {missing:?}"
    );
}

fn squad_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_squad"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// `squad man --dir` writes a page for every command; every page another page names
/// (`squad-notes(1)`) is one of them; `squad man <command>` prints the same page; the SYNOPSIS
/// shows each option's value (`[-C <path>]`).
#[test]
fn man_pages_for_every_command_and_only_pages_that_exist_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let out = squad_in(tmp.path(), &["man", "--dir", "pages"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let dir = tmp.path().join("pages");
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    pages.sort();
    let listed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(listed.lines().count(), pages.len(), "{listed}");
    // Every command of the help tree has its page, found generically from --help.
    let mut expected = vec!["squad.1".to_owned()];
    for (group, _) in commands_section(&help_of(&[])) {
        if group == "help" {
            continue;
        }
        expected.push(format!("squad-{group}.1"));
        for (sub, _) in commands_section(&help_of(&[&group])) {
            if sub != "help" {
                expected.push(format!("squad-{group}-{sub}.1"));
            }
        }
    }
    expected.sort();
    assert_eq!(pages, expected);
    // Every reference to a page, in every page, names a page that was written.
    let mut references = 0;
    for page in &pages {
        let text = std::fs::read_to_string(dir.join(page)).unwrap();
        for part in text.split("squad\\-").skip(1) {
            if let Some(name) = part.split_once("(1)").map(|(n, _)| n)
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '\\' || c == '-')
            {
                let file = format!("squad-{}.1", name.replace("\\-", "-"));
                assert!(pages.contains(&file), "{page} names {file}, not written");
                references += 1;
            }
        }
    }
    assert!(references >= pages.len() - 1, "{references} references");
    // One page printed alone is the page written.
    let one = squad_in(tmp.path(), &["man", "notes", "write"]);
    assert_eq!(one.status.code(), Some(0));
    assert_eq!(
        one.stdout,
        std::fs::read(dir.join("squad-notes-write.1")).unwrap()
    );
    let top = String::from_utf8(squad_in(tmp.path(), &["man"]).stdout).unwrap();
    assert!(top.contains(r"[\fB\-C\fR <\fIpath\fR>]"), "{top}");
    assert!(top.contains(r"[\fB\-\-state\-dir\fR <\fIdir\fR>]"), "{top}");
    assert!(
        !top.contains("squad-help") && !top.contains(r"squad\-help"),
        "{top}"
    );
    let write = String::from_utf8(one.stdout).unwrap();
    assert!(write.contains(r"\fB\-\-agent\fR <\fIname\fR>"), "{write}");
    // Writing again replaces the pages and leaves no temporary file.
    assert_eq!(
        squad_in(tmp.path(), &["man", "--dir", "pages"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), pages.len());
}

/// Bad input tried: an unknown command, an unknown subcommand, a command with --dir, a --dir that
/// is a file. Usage errors are exit 2 and name what exists; nothing is written.
#[test]
fn man_refuses_unknown_commands_and_a_dir_that_is_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (&["man", "nope"][..], "(it has: notes,"),
        (
            &["man", "notes", "nope"][..],
            "'squad notes' has no subcommand 'nope'",
        ),
        (
            &["man", "doctor", "x"][..],
            "'squad doctor' has no subcommand 'x'",
        ),
        (&["man", "notes", "--dir", "d"][..], "cannot be used with"),
    ] {
        let out = squad_in(tmp.path(), args);
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    std::fs::write(tmp.path().join("file"), "x").unwrap();
    let out = squad_in(tmp.path(), &["man", "--dir", "file"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .starts_with("error: cannot create the directory")
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}

/// The text limits of a gate are in `approval request --help`, with the library's own numbers,
/// and hold at the edge: 200 characters pass the check, 201 are refused (exit 2).
#[test]
fn approval_request_help_states_the_text_limits_it_enforces() {
    use squad_notify::{MAX_DETAIL_CHARS, MAX_LINE_CHARS};
    let help = help_of(&["approval", "request"]).replace('\n', " ");
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains(&format!("work, at most {MAX_LINE_CHARS} characters")),
        "{help}"
    );
    assert!(
        help.contains(&format!("one line, at most {MAX_LINE_CHARS} characters")),
        "{help}"
    );
    assert!(
        help.contains(&format!(
            "at most {MAX_DETAIL_CHARS} characters and 8 lines"
        )),
        "{help}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let request = |topic: &str| {
        Command::new(env!("CARGO_BIN_EXE_squad"))
            .current_dir(tmp.path())
            .arg("--state-dir")
            .arg(&state)
            .args([
                "approval",
                "request",
                "--mode",
                "autopilot",
                "--trigger",
                "risk-gate",
            ])
            .args(["--topic", topic, "--awaiting", "approval", "--detail", "x"])
            .output()
            .unwrap()
    };
    let out = request(&"é".repeat(MAX_LINE_CHARS + 1));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains(&format!("topic is longer than {MAX_LINE_CHARS} characters"))
    );
    assert!(!state.join("state.json").exists(), "nothing recorded");
    let out = request(&"é".repeat(MAX_LINE_CHARS));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}
