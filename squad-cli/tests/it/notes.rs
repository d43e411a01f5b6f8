//! `squad notes write | show | list` against real git repositories.

use std::process::{Command, Output};
use std::sync::Arc;

use crate::git_repo::{Repo, run_until_reader_leaves};
use squad_model::{AgentName, NoteEntry, NoteType};
use squad_notes::{GixNotes, Notes};

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

#[test]
fn write_show_list_round_trip_and_git_reads_it() {
    let repo = Repo::new();
    let head = repo.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let out = repo.squad(&[
        "notes",
        "write",
        "--agent",
        "data",
        "--type",
        "decision",
        "--fields",
        r#"{"decision":"Use JWT RS256","alternatives_considered":["HS256"],"x-custom":1}"#,
        "--promote",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = stdout(&out).trim().to_owned();
    assert!(
        id.parse::<squad_model::EntryId>().is_ok(),
        "prints the new id: {id}"
    );

    let out = repo.squad(&[
        "notes",
        "write",
        "--agent",
        "data",
        "--type",
        "progress",
        "--content",
        "halfway",
        "--archive",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let second: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(second["content"], "halfway");
    assert_eq!(second["archive_on_close"], true);
    assert_eq!(second["agent"], "data");

    let out = repo.squad(&["notes", "show", "--agent", "data", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let shown: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown.len(), 2);
    assert_eq!(shown[0]["id"], id.as_str());
    assert_eq!(shown[0]["promote_to_permanent"], true);
    assert_eq!(shown[0]["x-custom"], 1);
    assert_eq!(shown[1], second);

    // Human output names every entry.
    let out = repo.squad(&["notes", "show", "--agent", "data", "HEAD"]);
    assert!(
        stdout(&out).contains(&id) && stdout(&out).contains("    Use JWT RS256"),
        "{}",
        stdout(&out)
    );

    let out = repo.squad(&["--json", "notes", "list", "--agent", "data"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        listed,
        serde_json::json!([{"commit": head, "entries": 2, "type": "commit"}])
    );

    let git = repo.git(&["notes", "--ref=squad/data", "show", "HEAD"]);
    assert_eq!(git.lines().count(), 2);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(git.lines().next().unwrap()).unwrap()["id"],
        id.as_str()
    );
}

#[test]
fn shared_namespace_and_explicit_commit() {
    let repo = Repo::new();
    repo.git(&["commit", "-q", "--allow-empty", "-m", "second"]);
    let out = repo.squad(&[
        "notes",
        "write",
        "--agent",
        "worf",
        "--type",
        "research",
        "--content",
        "cve",
        "--namespace",
        "research",
        "--commit",
        "HEAD~1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = repo.squad(&["notes", "show", "--agent", "research", "HEAD~1", "--json"]);
    let shown: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown[0]["agent"], "worf");
    // No note on HEAD: an empty array and exit 0.
    let out = repo.squad(&["notes", "show", "--agent", "research", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap(),
        serde_json::json!([])
    );
}

#[test]
fn show_warns_about_lines_that_are_not_entries_and_keeps_going() {
    let repo = Repo::new();
    let out = repo.squad(&[
        "notes",
        "write",
        "--agent",
        "data",
        "--type",
        "progress",
        "--content",
        "ok",
    ]);
    assert_eq!(out.status.code(), Some(0));
    repo.git(&[
        "notes",
        "--ref=squad/data",
        "append",
        "-m",
        "hand-written remark",
        "HEAD",
    ]);
    let head = repo.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let out = repo.squad(&["notes", "show", "--agent", "data", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let shown: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown.len(), 1);
    // git's append put a blank line first, so the remark is on line 3.
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!("warning: {head} line 3: invalid JSON")),
        "{err}"
    );
}

/// Every bad input: exit 2, one `error:` line naming the problem, the notes ref unchanged.
#[test]
fn bad_input_is_exit_2_and_changes_nothing() {
    let repo = Repo::new();
    let out = repo.squad(&[
        "notes",
        "write",
        "--agent",
        "data",
        "--type",
        "progress",
        "--content",
        "seed",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let worf = repo.squad(&[
        "notes",
        "write",
        "--agent",
        "worf",
        "--type",
        "security",
        "--content",
        "seed",
    ]);
    assert_eq!(worf.status.code(), Some(0));
    let (data_tip, worf_tip) = (repo.tip("data"), repo.tip("worf"));
    let base = ["notes", "write", "--agent", "data", "--type", "decision"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--fields", "{not json"], "--fields is not valid JSON"),
        (vec!["--fields", "[1,2]"], "--fields must be a JSON object"),
        (vec!["--fields", r#"{"effort_hours":-1}"#], "effort_hours"),
        (vec!["--fields", r#"{"confidence":"maybe"}"#], "confidence"),
        (
            vec!["--fields", r#"{"timestamp":"2026-03-23T14:00:00+02:00"}"#],
            "timestamp",
        ),
        (
            vec!["--fields", r#"{"agent":"worf"}"#],
            "contradicts --agent data",
        ),
        (
            vec!["--content", "x", "--commit", "no-such-rev"],
            "commit \"no-such-rev\" not found",
        ),
        (
            vec![
                "--content",
                "x",
                "--commit",
                "1111111111111111111111111111111111111111",
            ],
            "not found",
        ),
        (
            vec!["--content", "x", "--namespace", "worf"],
            "agent data may not write to namespace refs/notes/squad/worf",
        ),
        (
            vec!["--content", "x", "--namespace", "Worf"],
            "invalid agent name \"Worf\"",
        ),
    ];
    for (extra, expect) in cases {
        let mut args = base.to_vec();
        args.extend(extra.iter());
        let out = repo.squad(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(expect),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    for (args, expect) in [
        (
            vec![
                "notes",
                "write",
                "--agent",
                "Data",
                "--type",
                "decision",
                "--content",
                "x",
            ],
            "invalid agent name \"Data\"",
        ),
        (
            vec![
                "notes",
                "write",
                "--agent",
                "../x",
                "--type",
                "decision",
                "--content",
                "x",
            ],
            "invalid agent name",
        ),
        (
            vec![
                "notes",
                "write",
                "--agent",
                "data",
                "--type",
                "opinion",
                "--content",
                "x",
            ],
            "invalid value 'opinion' for '--type <type>'",
        ),
        (
            vec!["notes", "write", "--agent", "data", "--type", "decision"],
            "--fields",
        ),
        (
            vec![
                "notes",
                "write",
                "--agent",
                "data",
                "--type",
                "decision",
                "--content",
                "x",
                "--fields",
                "{}",
            ],
            "cannot be used with",
        ),
        (
            vec!["notes", "show", "--agent", "data", "no-such-rev"],
            "not found",
        ),
        (
            vec!["notes", "list", "--agent", "NOPE"],
            "invalid agent name",
        ),
    ] {
        let out = repo.squad(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
    assert_eq!(repo.tip("data"), data_tip);
    assert_eq!(repo.tip("worf"), worf_tip);
    assert_eq!(repo.tip("Worf"), None);
    // Outside a repository.
    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_squad"))
        .arg("-C")
        .arg(empty.path())
        .args(["notes", "list", "--agent", "data"])
        .env("GIT_CEILING_DIRECTORIES", empty.path().parent().unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a git repository"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn help_has_examples() {
    for sub in ["write", "show", "list"] {
        let out = Command::new(env!("CARGO_BIN_EXE_squad"))
            .args(["notes", sub, "--help"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert!(stdout(&out).contains("Example:\n  squad notes"), "{sub}");
    }
}

/// 8 threads x 50 library writes and 4 processes x 25 `squad notes write` runs, all at once, on
/// one repository and one commit: all 500 entries are there afterwards.
#[test]
fn threads_and_processes_together_lose_nothing() {
    let repo = Arc::new(Repo::new());
    let head: squad_notes::Oid = repo.git(&["rev-parse", "HEAD"]).trim().parse().unwrap();
    let notes = Arc::new(Notes::new(GixNotes::open(repo.path()).unwrap()));
    let data = AgentName::new("data").unwrap();
    let mut handles = Vec::new();
    for t in 0..8 {
        let (notes, data, head) = (Arc::clone(&notes), data.clone(), head.clone());
        handles.push(std::thread::spawn(move || {
            for i in 0..50 {
                let mut e = NoteEntry::new(data.clone(), NoteType::Progress);
                e.content = Some(format!("thread {t} write {i}"));
                notes.write(&data, &head, &e).unwrap();
            }
        }));
    }
    for p in 0..4 {
        let repo = Arc::clone(&repo);
        handles.push(std::thread::spawn(move || {
            for i in 0..25 {
                let content = format!("process {p} run {i}");
                let out = repo.squad(&[
                    "notes",
                    "write",
                    "--agent",
                    "data",
                    "--type",
                    "progress",
                    "--content",
                    &content,
                ]);
                assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    let shown = notes.show(&data, &head).unwrap();
    assert_eq!(shown.entries.len(), 500);
    let from_processes = shown
        .entries
        .iter()
        .filter(|e| {
            e.content
                .as_deref()
                .is_some_and(|c| c.starts_with("process"))
        })
        .count();
    assert_eq!(from_processes, 100);
    let git = repo.git(&["notes", "--ref=squad/data", "show", "HEAD"]);
    assert_eq!(git.lines().count(), 500);
}

/// 3,000 notes under every first byte (so `notes list` reads and writes them in 256 batches,
/// and its output in several pieces): the text is one `<object> <entries>` line per note in
/// object order, and `--json` is, byte for byte, the document serde_json's pretty printer
/// writes for the whole list (what the command printed before it streamed).
#[test]
fn list_streams_every_note_in_object_order_as_one_document() {
    let repo = Repo::new();
    let head = repo.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let notes = Notes::new(GixNotes::open(repo.path()).unwrap());
    let data = AgentName::new("data").unwrap();
    let mut batch = Vec::new();
    let mut expected = std::collections::BTreeMap::new();
    for i in 0..3000usize {
        let object = format!("{:02x}{:038x}", (i * 7) % 256, i);
        let entries = 1 + i % 3;
        for k in 0..entries {
            let mut e = NoteEntry::new(data.clone(), NoteType::Progress);
            e.content = Some(format!("note {i} entry {k}"));
            batch.push((object.parse().unwrap(), e));
        }
        expected.insert(object, (entries, "missing"));
    }
    notes.write_batch(&data, &batch).unwrap();
    // A note of git's own that holds no valid entry: listed with 0.
    repo.git(&[
        "notes",
        "--ref=squad/data",
        "add",
        "-m",
        "not an entry",
        "HEAD",
    ]);
    expected.insert(head, (0, "commit"));

    let out = repo.squad(&["notes", "list", "--agent", "data"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text: String = expected
        .iter()
        .map(|(object, (entries, _))| format!("{object} {entries}\n"))
        .collect();
    assert_eq!(stdout(&out), text);

    let out = repo.squad(&["--json", "notes", "list", "--agent", "data"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let document = serde_json::Value::Array(
        expected
            .iter()
            .map(|(object, (entries, kind))| {
                serde_json::json!({"commit": object, "entries": entries, "type": kind})
            })
            .collect(),
    );
    let pretty = serde_json::to_string_pretty(&document).unwrap() + "\n";
    assert!(pretty.len() > 3 * 64 * 1024, "several output pieces");
    assert_eq!(stdout(&out), pretty);
}

/// A reader that goes away after the first byte of a long list (the command is still reading
/// and writing batches): exit 0, nothing on stderr, for the text and the JSON list.
#[test]
fn list_to_a_reader_that_closes_early_stops_quietly() {
    let repo = Repo::new();
    let notes = Notes::new(GixNotes::open(repo.path()).unwrap());
    let data = AgentName::new("data").unwrap();
    let batch: Vec<_> = (0..5000usize)
        .map(|i| {
            let mut e = NoteEntry::new(data.clone(), NoteType::Progress);
            e.content = Some(format!("note {i}"));
            (format!("{:02x}{:038x}", i % 256, i).parse().unwrap(), e)
        })
        .collect();
    notes.write_batch(&data, &batch).unwrap();
    for args in [
        vec!["notes", "list", "--agent", "data"],
        vec!["--json", "notes", "list", "--agent", "data"],
    ] {
        let (read, code, err) = run_until_reader_leaves(&mut repo.command(&args), 1);
        assert_eq!(read, 1, "{args:?}");
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert_eq!(err, "", "{args:?}");
    }
}
