//! The contract every command keeps, checked over the whole command tree as `--help` lists it (so
//! a new command is covered, or this test names it):
//!
//! - every `--json` document uses snake_case keys; the one exception is the `notify` object of
//!   `state.json` (which `approval configure` prints), whose keys follow the notify schema
//!   (`squad schema notify-state`). Keys that are data are not names: a note's own fields (the
//!   scenario writes snake_case ones), HTTP statuses (`"403"`) and tier moves (`"hot->cold"`).
//! - every closed-set value (`[possible values: ...]`), mistyped by one letter, is refused with
//!   exit 2, one `error:` line naming the value and a `hint:` line suggesting the right one.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::git_repo::Clones;
use crate::memory::{add_decision, spawn_debugging};

fn squad_help(path: &[String]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_squad"))
        .args(path)
        .arg("-h")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{path:?} -h");
    String::from_utf8(out.stdout).unwrap()
}

/// Every leaf command, as the `Commands:` sections of `-h` list them.
fn leaf_commands() -> Vec<Vec<String>> {
    fn walk(path: Vec<String>, leaves: &mut Vec<Vec<String>>) {
        let help = squad_help(&path);
        let mut subs = Vec::new();
        let mut in_commands = false;
        for line in help.lines() {
            if line == "Commands:" {
                in_commands = true;
            } else if line.trim().is_empty() || !line.starts_with(' ') {
                in_commands = false;
            } else if in_commands && line.starts_with("  ") && !line.starts_with("   ") {
                let name = line.split_whitespace().next().unwrap();
                if name != "help" {
                    subs.push(name.to_owned());
                }
            }
        }
        if subs.is_empty() {
            leaves.push(path);
            return;
        }
        for s in subs {
            let mut p = path.clone();
            p.push(s);
            walk(p, leaves);
        }
    }
    let mut leaves = Vec::new();
    walk(Vec::new(), &mut leaves);
    leaves
}

/// The closed-set options of a command: (`--flag` or `<positional>`, its values), read from the
/// `[possible values: a, b]` that `-h` prints after the option's description.
fn closed_sets(help: &str) -> Vec<(String, Vec<String>)> {
    let mut sets = Vec::new();
    let mut current: Option<String> = None;
    let mut text = String::new();
    let flush = |current: &Option<String>, text: &str, sets: &mut Vec<(String, Vec<String>)>| {
        if let (Some(opt), Some(start)) = (current, text.find("[possible values: ")) {
            let rest = &text[start + "[possible values: ".len()..];
            let end = rest.find(']').unwrap();
            let values = rest[..end]
                .split(',')
                .map(|v| v.trim().to_owned())
                .collect();
            sets.push((opt.clone(), values));
        }
    };
    for line in help.lines() {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        let starts_option = (2..=6).contains(&indent) && (t.starts_with('-') || t.starts_with('<'));
        if starts_option {
            flush(&current, &text, &mut sets);
            text.clear();
            // `-v, --verbose...`, `--situation <situation>`, `<shell>`
            let first = t
                .split_whitespace()
                .find(|w| w.starts_with("--") || w.starts_with('<'))
                .unwrap()
                .trim_end_matches(',')
                .to_owned();
            current = Some(first);
        } else if t.is_empty() || indent == 0 {
            flush(&current, &text, &mut sets);
            text.clear();
            current = None;
            continue;
        }
        text.push(' ');
        text.push_str(t);
    }
    flush(&current, &text, &mut sets);
    sets
}

/// `value` with its middle character removed: one letter off.
fn typo(value: &str) -> String {
    let chars: Vec<char> = value.chars().collect();
    let mid = chars.len() / 2;
    chars
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != mid)
        .map(|(_, c)| c)
        .collect()
}

#[test]
fn every_closed_set_value_mistyped_by_one_letter_gets_a_suggestion() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for cmd in leaf_commands() {
        let help = squad_help(&cmd);
        for (opt, values) in closed_sets(&help) {
            for value in &values {
                let wrong = typo(value);
                let mut args = cmd.clone();
                if opt.starts_with("--") {
                    args.push(format!("{opt}={wrong}"));
                } else {
                    args.push(wrong.clone());
                }
                let out = Command::new(env!("CARGO_BIN_EXE_squad"))
                    .args(&args)
                    .output()
                    .unwrap();
                let err = String::from_utf8(out.stderr).unwrap();
                let lines: Vec<&str> = err.lines().collect();
                let ok = out.status.code() == Some(2)
                    && out.stdout.is_empty()
                    && lines.len() == 2
                    && lines[0].starts_with(&format!("error: invalid value '{wrong}'"))
                    && lines[1].starts_with("hint: ")
                    && lines[1].contains(&format!("'{value}'"));
                if !ok {
                    failures.push(format!(
                        "squad {}: exit {:?}, stderr {err:?}",
                        args.join(" "),
                        out.status.code()
                    ));
                }
                checked += 1;
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    // The tree has closed sets in notes, memory, approval, route, schema and completions: a
    // parser that found none would pass the loop above vacuously.
    assert!(checked >= 30, "only {checked} closed-set values found");
}

/// Every key of `v` is snake_case, except inside a `notify` object; `path` names where a bad key is.
fn bad_keys(v: &Value, path: &str, bad: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let data = k.chars().all(|c| c.is_ascii_digit())
                    || k.split_once("->").is_some_and(|(from, to)| {
                        [from, to]
                            .iter()
                            .all(|t| ["hot", "cold", "wiki", "archive"].contains(t))
                    });
                let snake = data
                    || k.starts_with(|c: char| c.is_ascii_lowercase())
                        && k.chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                        && !k.contains("__")
                        && !k.ends_with('_');
                if !snake {
                    bad.push(format!("{path}.{k}"));
                }
                if k != "notify" {
                    bad_keys(child, &format!("{path}.{k}"), bad);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                bad_keys(item, &format!("{path}[{i}]"), bad);
            }
        }
        _ => {}
    }
}

struct Scenario {
    w: Clones,
    covered: BTreeSet<String>,
    bad: Vec<String>,
}

impl Scenario {
    /// Runs `squad --json <args>` in `dir` (with `stdin`), asserts exit 0 and a JSON (or JSON
    /// Lines) stdout, and checks its keys.
    #[track_caller]
    fn run(&mut self, dir: &Path, args: &[&str], stdin: Option<&str>) -> Vec<Value> {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        let out = self.w.squad(dir, &full, stdin);
        assert_eq!(
            out.status.code(),
            Some(0),
            "squad {full:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let docs: Vec<Value> = serde_json::Deserializer::from_str(&text)
            .into_iter()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("squad {full:?}: not JSON ({e}): {text}"));
        assert!(!docs.is_empty(), "squad {full:?}: no JSON on stdout");
        let name: Vec<&str> = args
            .iter()
            .take_while(|a| !a.starts_with('-'))
            .copied()
            .collect();
        let name = name[..name.len().min(2)].join(" ");
        for d in &docs {
            if name == "approval configure" {
                // It prints the notify object it wrote.
                bad_keys(&serde_json::json!({ "notify": d }), &name, &mut self.bad);
            } else {
                bad_keys(d, &name, &mut self.bad);
            }
        }
        self.covered.insert(name);
        docs
    }
}

#[test]
fn every_json_document_uses_snake_case_keys() {
    let w = Clones::new("seed");
    let (a, b) = (w.path("a"), w.path("b"));
    let root = w.root().to_path_buf();
    let mut s = Scenario {
        w,
        covered: BTreeSet::new(),
        bad: Vec::new(),
    };

    // Notes: every command, on two clones of a bare remote.
    s.run(&a, &["notes", "setup"], None);
    s.w.git(&a, &["config", "squad.defaultBranch", "main"]);
    let fields = r#"{"decision":"Use JWT RS256","reasoning":"services verify it"}"#;
    s.run(
        &a,
        &[
            "notes",
            "write",
            "--agent",
            "data",
            "--type",
            "decision",
            "--fields",
            fields,
            "--promote",
        ],
        None,
    );
    s.run(&a, &["notes", "show", "--agent", "data", "HEAD"], None);
    s.run(&a, &["notes", "list", "--agent", "data"], None);
    s.run(&a, &["notes", "verify", "--agent", "data", "HEAD"], None);
    s.run(&a, &["notes", "sync"], None);
    s.run(&b, &["notes", "sync"], None);
    s.run(&a, &["notes", "promote"], None);
    // A branch with a flagged note, closed unmerged: archived; then carried onto main's tip.
    s.w.git(&a, &["checkout", "-q", "-b", "spike"]);
    s.w.git(&a, &["commit", "-q", "--allow-empty", "-m", "spike"]);
    s.run(
        &a,
        &[
            "notes",
            "write",
            "--agent",
            "research",
            "--type",
            "research",
            "--fields",
            r#"{"topic":"OAuth","findings":"device flow works"}"#,
            "--promote",
        ],
        None,
    );
    s.w.git(&a, &["checkout", "-q", "main"]);
    s.run(&a, &["notes", "archive", "--closed", "spike"], None);
    s.run(&a, &["notes", "carry", "main..spike", "--to", "main"], None);

    // Memory: import a history, add, search, show, supersede, validate, the Scribe, a spawn.
    std::fs::write(
        a.join("history.md"),
        "# Data\n\n## Learnings\n\n### 2026-03-14: Staging deploy times out\nRaise the health-check grace period.\n\n### 2026-03-20: decision: keep RS256\nServices verify RS256.\n",
    )
    .unwrap();
    s.run(
        &a,
        &["memory", "import", "--agent", "data", "history.md"],
        None,
    );
    let added = s.run(
        &a,
        &add_decision("use RS384", &["--body", "Rotate to RS384."]),
        None,
    );
    let new_id = added[0]["id"].as_str().unwrap().to_owned();
    let found = s.run(
        &a,
        &["memory", "search", "--agent", "data", "deploy timeout"],
        None,
    );
    let hit = found[0][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no hit: {}", found[0]))
        .to_owned();
    s.run(&a, &["memory", "show", &hit], None);
    s.run(&a, &["memory", "supersede", &hit, "--by", &new_id], None);
    s.run(&a, &["memory", "validate"], None);
    s.run(&a, &["memory", "index"], None);
    s.run(
        &a,
        &[
            "memory",
            "scribe",
            "--agent",
            "data",
            "--now",
            "2026-11-30T18:00:00Z",
        ],
        None,
    );
    s.run(&a, &spawn_debugging("deploy timeout", &[]), None);

    // Approval: the in-chat channel, a gate, its status, a decision, the tamper acknowledgement.
    let notify = s.run(&a, &["approval", "configure", "--channel", "in-chat"], None);
    // The notify object itself, in its schema's spelling.
    assert_eq!(notify[0]["approvalChannel"], "in-chat", "{}", notify[0]);
    s.run(
        &a,
        &[
            "approval",
            "request",
            "--mode",
            "interactive",
            "--trigger",
            "step:plan",
            "--topic",
            "Rotate the keys",
            "--awaiting",
            "approve",
            "--detail",
            "Every session ends.",
        ],
        None,
    );
    s.run(&a, &["approval", "status"], None);
    s.run(&a, &["approval", "wait"], Some("/approve\n"));
    s.run(
        &a,
        &[
            "approval",
            "acknowledge-tamper",
            "--by",
            "Jane Doe <jane@example.com>",
        ],
        None,
    );

    // Routing: a generated trace, replayed, simulated under two policies, a leader's briefing.
    let trace = s.run(
        &root,
        &[
            "route", "generate", "--squads", "2", "--events", "50", "--seed", "7",
        ],
        None,
    );
    let mut text = String::new();
    for d in &trace {
        text.push_str(&d.to_string());
        text.push('\n');
    }
    std::fs::write(root.join("t.jsonl"), text).unwrap();
    std::fs::write(root.join("p0.json"), "{}").unwrap();
    std::fs::write(root.join("p1.json"), r#"{"leader_barrier_seconds":120}"#).unwrap();
    s.run(&root, &["route", "replay", "t.jsonl"], None);
    s.run(
        &root,
        &[
            "route", "simulate", "--policy", "p0.json", "--policy", "p1.json", "t.jsonl",
        ],
        None,
    );
    let squad = trace
        .iter()
        .find_map(|d| (d["kind"] == "squad").then(|| d["id"].as_str().unwrap().to_owned()))
        .expect("a generated trace creates squads");
    s.run(
        &root,
        &["route", "briefing", "--trace", "t.jsonl", "--squad", &squad],
        None,
    );

    // `route migrate` needs a PostgreSQL server: covered when the tests have one.
    let pg = squad_test_support::postgres::server()
        .map(|u| squad_test_support::postgres::TestDb::new(&u, "squad_cli_test"));
    if let Some(db) = &pg {
        s.run(&root, &["route", "migrate", "--db", &db.url], None);
    }

    s.run(&a, &["doctor"], None);

    assert!(s.bad.is_empty(), "keys not in snake_case: {:#?}", s.bad);
    // Every command of the tree that prints a JSON report ran above. `mcp` speaks JSON-RPC (its
    // tools return these same documents), `schema` prints a JSON Schema document (whose keywords
    // are JSON Schema's), `completions` and `man` print scripts and roff.
    let mut not_reports = vec!["mcp", "schema", "completions", "man"];
    if pg.is_none() {
        not_reports.push("route migrate");
    }
    let missing: Vec<String> = leaf_commands()
        .into_iter()
        .map(|c| c.join(" "))
        .filter(|c| !not_reports.contains(&c.as_str()) && !s.covered.contains(c))
        .collect();
    assert!(missing.is_empty(), "commands not covered: {missing:?}");
}

#[test]
fn every_command_of_the_tree_has_an_example_in_its_help() {
    let leaves = leaf_commands();
    assert!(leaves.len() >= 30, "{leaves:?}");
    let missing: Vec<String> = leaves
        .iter()
        .filter(|cmd| !["completions", "man"].contains(&cmd.join(" ").as_str()))
        .filter(|cmd| {
            let out = Command::new(env!("CARGO_BIN_EXE_squad"))
                .args(*cmd)
                .arg("--help")
                .output()
                .unwrap();
            !String::from_utf8(out.stdout).unwrap().contains("Example")
        })
        .map(|cmd| cmd.join(" "))
        .collect();
    assert!(missing.is_empty(), "no example in --help of: {missing:?}");
}

#[test]
fn every_value_name_is_lowercase() {
    let mut upper = BTreeSet::new();
    let mut groups = vec![Vec::new()];
    groups.extend(leaf_commands());
    for cmd in groups {
        let help = squad_help(&cmd);
        for (i, _) in help.match_indices('<') {
            let name: String = help[i + 1..].chars().take_while(|c| *c != '>').collect();
            if name.chars().any(|c| c.is_ascii_uppercase()) {
                upper.insert(format!("{}: <{name}>", cmd.join(" ")));
            }
        }
    }
    assert!(upper.is_empty(), "{upper:#?}");
}
