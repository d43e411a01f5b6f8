//! `squad route replay`, `squad route briefing` and `squad route generate`.

use std::process::{Command, Output};

use crate::git_repo::run_with_stdin;

fn squad() -> Command {
    Command::new(env!("CARGO_BIN_EXE_squad"))
}

const TRACE: &str = r#"{"kind":"workspace","id":"w1","issue_prefix":"SQ"}
{"kind":"user","id":"00000000-0000-4000-8000-0000000000e1","name":"Sam"}
{"kind":"membership","workspace_id":"w1","user_id":"00000000-0000-4000-8000-0000000000e1","role":"member"}
{"kind":"agent","id":"00000000-0000-4000-8000-0000000000a1","workspace_id":"w1","name":"Lead","owner_id":"00000000-0000-4000-8000-0000000000e1","runtime":{"runtime_id":"rt1","status":"online"},"created_at":"2026-11-30T09:00:00Z"}
{"kind":"agent","id":"00000000-0000-4000-8000-0000000000a2","workspace_id":"w1","name":"Ada","owner_id":"00000000-0000-4000-8000-0000000000e1","skills":["rust","postgres","multica-squads"],"created_at":"2026-11-30T09:00:00Z"}
{"kind":"issue","id":"i1","workspace_id":"w1","title":"Fix login","status":"backlog","created_at":"2026-11-30T09:00:00Z","number":7}
{"kind":"event","at":"2026-11-30T10:00:00Z","event":{"type":"create_squad","actor":"00000000-0000-4000-8000-0000000000e1","workspace_id":"w1","squad_id":"00000000-0000-4000-8000-0000000000s1","name":"Core","leader_id":"00000000-0000-4000-8000-0000000000a1"}}
"#;

/// Runs `squad <args>` in `dir` with `stdin` on its standard input.
pub(crate) fn run(args: &[&str], stdin: Option<&str>, dir: &std::path::Path) -> Output {
    run_with_stdin(squad().args(args).current_dir(dir), stdin)
}

/// A valid trace: a squad is created, Ada joins, the issue is assigned while in backlog, then
/// promoted, which wakes the leader.
fn trace() -> String {
    // `s1` is not hex; use a UUID-shaped squad id instead.
    let squad = "00000000-0000-4000-8000-0000000005a1";
    let mut t = TRACE.replace("00000000-0000-4000-8000-0000000000s1", squad);
    for ev in [
        format!(r#"{{"type":"add_member","actor":"00000000-0000-4000-8000-0000000000e1","squad_id":"{squad}","member_type":"agent","member_id":"00000000-0000-4000-8000-0000000000a2","role":" backend "}}"#),
        format!(r#"{{"type":"update_issue","actor":{{"type":"member","id":"00000000-0000-4000-8000-0000000000e1"}},"issue_id":"i1","assignee_type":"squad","assignee_id":"{squad}"}}"#),
        r#"{"type":"update_issue","actor":{"type":"member","id":"00000000-0000-4000-8000-0000000000e1"},"issue_id":"i1","status":"todo"}"#.to_owned(),
    ] {
        t.push_str(&format!("{{\"kind\":\"event\",\"event\":{ev}}}\n"));
    }
    t
}

#[test]
fn replay_prints_one_json_document_per_event() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.jsonl"), trace()).unwrap();
    let out = run(&["route", "replay", "t.jsonl"], None, dir.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let docs: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(docs.len(), 4);
    assert_eq!(docs[0]["line"], 7);
    assert_eq!(docs[0]["event"], "create_squad");
    assert_eq!(docs[0]["decisions"][0]["type"], "create_squad");
    assert_eq!(docs[1]["decisions"][0]["type"], "add_member");
    assert_eq!(
        docs[2]["decisions"][1],
        serde_json::json!({"type": "noop", "reason": "backlog", "rule": "assign"})
    );
    let enqueue = &docs[3]["decisions"][1];
    assert_eq!(enqueue["type"], "enqueue");
    assert_eq!(enqueue["source"], "status");
    assert_eq!(enqueue["task"]["is_leader_task"], true);
    assert_eq!(
        enqueue["task"]["agent_id"],
        "00000000-0000-4000-8000-0000000000a1"
    );
    // The same trace from stdin gives the same output.
    let again = run(&["route", "replay", "-"], Some(&trace()), dir.path());
    assert_eq!(String::from_utf8(again.stdout).unwrap(), text);
}

#[test]
fn replay_rule_errors_are_decisions_with_the_reference_text() {
    let dir = tempfile::tempdir().unwrap();
    let t = format!(
        "{}{}\n",
        trace(),
        r#"{"kind":"event","event":{"type":"update_issue","actor":{"type":"member","id":"00000000-0000-4000-8000-0000000000e1"},"issue_id":"i1","assignee_type":"squad"}}"#
    );
    let out = run(&["route", "replay", "-"], Some(&t), dir.path());
    assert_eq!(out.status.code(), Some(0));
    let last = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_owned();
    let v: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(
        v["decisions"],
        serde_json::json!([{"type": "reject", "code": 400, "message": "assignee_type and assignee_id must be provided together"}])
    );
}

#[test]
fn replay_bad_input_is_exit_2_with_the_line_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("{\"kind\":\"event\",", "error: line 11: invalid JSON: "),
        (
            r#"{"kind":"event","event":{"type":"frobnicate"}}"#,
            "error: line 11: unknown event kind \"frobnicate\"",
        ),
        (
            r#"{"kind":"event","event":{"type":"claim","task_id":"nope"}}"#,
            "error: line 11: unknown task \"nope\"",
        ),
        (
            r#"{"kind":"event","event":{"type":"update_issue","actor":{"type":"member","id":"u9"},"issue_id":"i1"}}"#,
            "error: line 11: unknown user \"u9\"",
        ),
        (
            r#"{"kind":"issue","id":"i2","workspace_id":"w1","created_at":"2026-11-30T09:00:00Z"}"#,
            "error: line 11: entity records must come before the first event",
        ),
    ];
    for (bad, want) in cases {
        let t = format!("{}{bad}\n", trace());
        let out = run(&["route", "replay", "-"], Some(&t), dir.path());
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.starts_with(want), "{bad}: {err}");
        assert!(
            out.stdout.is_empty(),
            "nothing is printed for an invalid trace"
        );
    }
    let out = run(&["route", "replay", "missing.jsonl"], None, dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .starts_with("error: cannot open")
    );
    std::fs::write(
        dir.path().join("p.json"),
        "{\"cancel_tasks_on_reassign\": \"yes\"}",
    )
    .unwrap();
    let out = run(
        &["route", "replay", "--policy", "p.json", "-"],
        Some(&trace()),
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .starts_with("error: invalid policy")
    );
}

#[test]
fn briefing_prints_the_final_state_roster() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.jsonl"), trace()).unwrap();
    let squad = "00000000-0000-4000-8000-0000000005a1";
    let out = run(
        &[
            "route",
            "briefing",
            "--trace",
            "t.jsonl",
            "--squad",
            squad,
            "--owns-status",
        ],
        None,
        dir.path(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("## Squad Operating Protocol"));
    assert!(text.contains("Own the parent issue status"));
    assert!(text.contains(
        "- Lead — agent — `[@Lead](mention://agent/00000000-0000-4000-8000-0000000000a1)`\n\nMembers:\n\
         - Ada — agent, role: \"backend\" — skills: postgres, rust — `[@Ada](mention://agent/00000000-0000-4000-8000-0000000000a2)`"
    ), "{text}");
    let out = run(
        &[
            "route", "briefing", "--trace", "t.jsonl", "--squad", squad, "--json",
        ],
        None,
        dir.path(),
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["owns_issue_status"], false);
    assert!(
        v["briefing"]
            .as_str()
            .unwrap()
            .contains("Do NOT change this issue's status")
    );
    let out = run(
        &["route", "briefing", "--trace", "t.jsonl", "--squad", "nope"],
        None,
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .starts_with("error: unknown squad \"nope\"")
    );
}

/// `--commands <file>` words the commands the briefing names; without it, multica's wording.
#[test]
fn briefing_commands_come_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.jsonl"), trace()).unwrap();
    std::fs::write(
        dir.path().join("ours.json"),
        r#"{"activity": "squadctl record <issue-id> <outcome> --why '<reason>'", "set_status": "squadctl status <issue-id> <status>"}"#,
    )
    .unwrap();
    let squad = "00000000-0000-4000-8000-0000000005a1";
    let base = ["route", "briefing", "--trace", "t.jsonl", "--squad", squad];
    for owns in [true, false] {
        let mut args = base.to_vec();
        args.extend(["--commands", "ours.json"]);
        if owns {
            args.push("--owns-status");
        }
        let out = run(&args, None, dir.path());
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!text.contains("multica"), "{text}");
        assert!(
            text.contains("`squadctl record <issue-id> <outcome> --why '<reason>'`"),
            "{text}"
        );
        let status = if owns {
            "`squadctl status <issue-id> in_review`"
        } else {
            "never run `squadctl status` on it"
        };
        assert!(text.contains(status), "{text}");
    }
    let out = run(&base, None, dir.path());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("`multica squad activity <issue-id> <outcome> --reason \"<short reason>\"`"),
        "{text}"
    );
}

/// Bad `--commands` files tried: missing, a directory, not UTF-8, not JSON, an unknown key, a
/// template without its placeholder, over 64 KiB. Each is exit 2 naming the file, nothing on
/// stdout.
#[test]
fn a_bad_briefing_commands_file_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.jsonl"), trace()).unwrap();
    std::fs::create_dir(dir.path().join("adir")).unwrap();
    let files: [(&str, Vec<u8>, &str); 6] = [
        (
            "latin1.json",
            b"{\"activity\": \"caf\xe9\"}".to_vec(),
            "not UTF-8",
        ),
        ("text.json", b"activity = x".to_vec(), "briefing commands:"),
        (
            "typo.json",
            br#"{"set_staus": "x <issue-id> <status>"}"#.to_vec(),
            "unknown field",
        ),
        (
            "hole.json",
            br#"{"set_status": "move <issue-id> done"}"#.to_vec(),
            "lacks the placeholder <status>",
        ),
        (
            "big.json",
            format!("{{\"activity\": \"{}\"}}", "x".repeat(70_000)).into_bytes(),
            "64 KiB",
        ),
        (
            "tick.json",
            br#"{"activity": "log `<issue-id>` <outcome>"}"#.to_vec(),
            "backtick",
        ),
    ];
    for (name, bytes, _) in &files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let squad = "00000000-0000-4000-8000-0000000005a1";
    let mut cases: Vec<(&str, &str)> = files.iter().map(|(n, _, w)| (*n, *w)).collect();
    cases.push(("missing.json", "cannot read it"));
    cases.push(("adir", "cannot read it"));
    for (file, want) in cases {
        let out = run(
            &[
                "route",
                "briefing",
                "--trace",
                "t.jsonl",
                "--squad",
                squad,
                "--commands",
                file,
            ],
            None,
            dir.path(),
        );
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert!(err.starts_with("error: --commands '"), "{file}: {err}");
        assert!(err.contains(file) && err.contains(want), "{file}: {err}");
        assert!(out.stdout.is_empty(), "{file}");
    }
}

#[test]
fn generate_then_replay() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &[
            "route", "generate", "--squads", "5", "--events", "60", "--seed", "3",
        ],
        None,
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0));
    let trace = String::from_utf8(out.stdout).unwrap();
    let out = run(&["route", "replay", "-"], Some(&trace), dir.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 60);
}

/// Every size of `route generate` has an upper bound; over it, or negative, is exit 2 with one
/// error naming the flag and the limit, and nothing is printed (issue 14: `--squads 4000000000`
/// aborted with a 320 GB allocation).
#[test]
fn generate_sizes_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 7] = [
        (
            &["--squads", "4000000000", "--events", "1"],
            "error: invalid value '4000000000' for '--squads <squads>': 4000000000 is out of range (0 to 100000)",
        ),
        (
            &["--squads", "-1"],
            "error: invalid value '-1' for '--squads <squads>': -1 is out of range (0 to 100000)",
        ),
        (
            &["--events", "2000001"],
            "error: invalid value '2000001' for '--events <events>': 2000001 is out of range (0 to 2000000)",
        ),
        (
            &["--issues-per-squad", "101"],
            "error: invalid value '101' for '--issues-per-squad <issues-per-squad>': 101 is out of range (0 to 100)",
        ),
        (
            &["--seed", "-5"],
            "error: invalid value '-5' for '--seed <seed>': -5 is out of range (0 to 18446744073709551615)",
        ),
        (
            &["--squads", "99999999999999999999999"],
            "error: invalid value '99999999999999999999999' for '--squads <squads>'",
        ),
        (
            &[
                "--squads",
                "100000",
                "--issues-per-squad",
                "11",
                "--events",
                "1",
            ],
            "error: --squads × --issues-per-squad is 1100000, more than the limit of 1000000",
        ),
    ];
    for (args, want) in cases {
        let mut all = vec!["route", "generate"];
        all.extend_from_slice(args);
        let out = run(&all, None, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.starts_with(want), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 2, "one error and one hint: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// A policy file is one JSON object of known fields: a misspelt field, an array, a scalar or a
/// huge file is exit 2 naming the problem, instead of silently using the defaults.
#[test]
fn policy_files_are_strict() {
    let dir = tempfile::tempdir().unwrap();
    let big = format!("{{\"escalation_seconds\": 1{}}}", " ".repeat(2 << 20));
    let cases = [
        (
            r#"{"cancel_task_on_reassign": false}"#.to_owned(),
            "unknown field `cancel_task_on_reassign`",
        ),
        (
            "[]".to_owned(),
            "a policy must be a JSON object, not an array",
        ),
        (
            "3".to_owned(),
            "a policy must be a JSON object, not a number",
        ),
        (
            r#"{"max_attempts": -1}"#.to_owned(),
            "invalid value: integer `-1`",
        ),
        ("{".to_owned(), "invalid JSON"),
        (big, "larger than the limit of 1 MiB"),
    ];
    for (text, want) in cases {
        std::fs::write(dir.path().join("p.json"), &text).unwrap();
        let out = run(
            &["route", "replay", "--policy", "p.json", "-"],
            Some(&trace()),
            dir.path(),
        );
        assert_eq!(out.status.code(), Some(2), "{want}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.starts_with("error: "), "{err}");
        assert!(err.lines().next().unwrap().contains(want), "{want}: {err}");
        assert!(out.stdout.is_empty());
    }
    // A valid policy with one field changes only that field.
    std::fs::write(dir.path().join("p.json"), r#"{"max_attempts": 0}"#).unwrap();
    let out = run(
        &["route", "replay", "--policy", "p.json", "-"],
        Some(&trace()),
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0));
}

/// `route replay --db`: the final state is kept in an SQLite file, a later replay continues from
/// it (same decisions as one replay of the whole trace), and a bad trace writes nothing.
#[test]
fn replay_db_keeps_the_state_for_the_next_replay() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &[
            "route", "generate", "--squads", "3", "--events", "80", "--seed", "9",
        ],
        None,
        dir.path(),
    );
    let whole = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = whole.lines().collect();
    let first_event = lines
        .iter()
        .position(|l| l.contains(r#""kind":"event""#))
        .unwrap();
    let cut = first_event + 30;
    std::fs::write(dir.path().join("day1.jsonl"), lines[..cut].join("\n")).unwrap();
    std::fs::write(dir.path().join("day2.jsonl"), lines[cut..].join("\n")).unwrap();
    let decisions = |out: &Output| -> Vec<serde_json::Value> {
        String::from_utf8(out.stdout.clone())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["decisions"].clone())
            .collect()
    };
    let one = run(&["route", "replay", "-"], Some(&whole), dir.path());
    let d1 = run(
        &["route", "replay", "--db", "s.db", "day1.jsonl"],
        None,
        dir.path(),
    );
    assert_eq!(
        d1.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&d1.stderr)
    );
    let d2 = run(
        &["route", "replay", "--db", "s.db", "day2.jsonl"],
        None,
        dir.path(),
    );
    assert_eq!(
        d2.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&d2.stderr)
    );
    let mut both = decisions(&d1);
    both.extend(decisions(&d2));
    assert_eq!(both.len(), 80);
    assert_eq!(both, decisions(&one));
    // A bad trace: exit 2, nothing printed, the database unchanged.
    let before = std::fs::read(dir.path().join("s.db")).unwrap();
    let bad = format!(
        "{}\n{}\n",
        lines[cut], r#"{"kind":"event","event":{"type":"claim","task_id":"nope"}}"#
    );
    let out = run(
        &["route", "replay", "--db", "s.db", "-"],
        Some(&bad),
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read(dir.path().join("s.db")).unwrap(), before);
    // Entities defined again are refused (they are in the database already).
    let out = run(
        &["route", "replay", "--db", "s.db", "day1.jsonl"],
        None,
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("is defined twice")
    );
    // A file that is not a database: exit 1, the file untouched.
    std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    let out = run(
        &["route", "replay", "--db", "notes.txt", "day1.jsonl"],
        None,
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .starts_with("error: ")
    );
    assert_eq!(
        std::fs::read(dir.path().join("notes.txt")).unwrap(),
        b"hello"
    );
}

/// A trace line longer than 16 MiB is refused without being held in memory.
#[test]
fn replay_refuses_an_endless_line() {
    let dir = tempfile::tempdir().unwrap();
    let long = "x".repeat((16 << 20) + 10);
    let out = run(&["route", "replay", "-"], Some(&long), dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .starts_with("error: line 1: longer than the limit of 16 MiB")
    );
}
