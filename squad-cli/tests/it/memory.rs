//! `squad memory spawn|scribe|validate` against real files in a temp directory.

use std::path::Path;
use std::process::{Command, Output};

use crate::git_repo::run_with_stdin;

fn squad(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_squad"))
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap()
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(".squad/memory").join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn read(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(".squad/memory").join(rel)).unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// `squad memory add` of a decision by `data` titled `title`, then `more` (also the CLI
/// contract's).
pub(crate) fn add_decision<'a>(title: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let add = [
        "memory", "add", "--agent", "data", "--kind", "decision", "--title", title,
    ];
    [&add[..], more].concat()
}

/// `squad memory spawn` for `data` while debugging `task`, then `more` (also the CLI
/// contract's).
pub(crate) fn spawn_debugging<'a>(task: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let spawn = [
        "memory",
        "spawn",
        "--agent",
        "data",
        "--situation",
        "debugging",
        "--task",
        task,
    ];
    [&spawn[..], more].concat()
}

const HOT: &str = "Current task: fix login\nActive decisions: RS256\nLast actions: tests\nBlockers: none\nTalking to: worf\n";

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    write(dir.path(), "hot/data.md", HOT);
    write(
        dir.path(),
        "cold/data.md",
        "### 2026-11-20T00:00:00Z: note: staging deploy timeout traced to DNS\n**id:** c1\n---\n",
    );
    write(dir.path(), "wiki/auth.md", "# Auth\nTokens are RS256.\n");
    dir
}

#[test]
fn spawn_prints_the_hot_block_by_default() {
    let dir = repo();
    let o = squad(
        dir.path(),
        &["memory", "spawn", "--agent", "data", "--no-touch"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!("## Memory Context\n### Hot (current session)\n{HOT}")
    );
}

#[test]
fn spawn_json_has_the_contract_shape() {
    let dir = repo();
    let o = squad(
        dir.path(),
        &[
            "memory",
            "spawn",
            "--agent",
            "data",
            "--situation",
            "post-incident",
            "--include-wiki",
            "auth",
            "--task",
            "deploy timeout",
            "--no-touch",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let prompt = v["prompt"].as_str().unwrap();
    assert!(prompt.contains(
        "### Cold (summarized history)\n#### 2026-11-20T00:00:00Z: note: staging deploy timeout"
    ));
    assert!(prompt.contains("### Wiki (durable reference: auth)\n# Auth\nTokens are RS256.\n"));
    let tiers = &v["manifest"]["tiers"];
    assert_eq!(tiers["hot"]["bytes"], HOT.len());
    assert_eq!(tiers["hot"]["files"][0]["path"], "hot/data.md");
    assert_eq!(
        tiers["hot"]["files"][0]["sha256"].as_str().unwrap().len(),
        64
    );
    assert!(tiers["cold"]["bytes"].as_u64().unwrap() > 0);
    assert_eq!(tiers["wiki"]["files"][0]["path"], "wiki/auth.md");
    assert_eq!(v["manifest"]["left_out"], serde_json::json!([]));
}

#[test]
fn spawn_over_budget_says_so_in_the_prompt_and_the_manifest() {
    let dir = repo();
    let mut hot = String::from(HOT);
    for i in 0..80 {
        hot.push_str(&format!("Note {i}: {}\n", "z".repeat(50)));
    }
    write(dir.path(), "hot/data.md", &hot);
    let o = squad(
        dir.path(),
        &["memory", "spawn", "--agent", "data", "--no-touch", "--json"],
    );
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["manifest"]["tiers"]["hot"]["bytes"].as_u64().unwrap() <= 4096);
    assert_eq!(v["manifest"]["left_out"][0]["tier"], "hot");
    assert_eq!(v["manifest"]["left_out"][0]["reason"], "budget");
    let prompt = v["prompt"].as_str().unwrap();
    assert!(prompt.contains("> Memory notice:"), "{prompt}");
    assert!(prompt.contains("Current task: fix login") && prompt.contains("Talking to: worf"));
}

#[test]
fn spawn_only_reads_and_touch_records_the_ttl_refresh() {
    let dir = repo();
    let before = read(dir.path(), "cold/data.md");
    for extra in [&[][..], &["--no-touch"][..]] {
        let mut args = vec![
            "memory",
            "spawn",
            "--agent",
            "data",
            "--situation",
            "resuming",
        ];
        args.extend_from_slice(extra);
        let o = squad(dir.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_eq!(read(dir.path(), "cold/data.md"), before);
    }
    assert!(!dir.path().join(".squad/memory/.scribe.lock").exists());
    let o = squad(
        dir.path(),
        &[
            "memory",
            "spawn",
            "--agent",
            "data",
            "--situation",
            "resuming",
            "--touch",
            "--now",
            "2026-11-29T00:00:00Z",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(read(dir.path(), "cold/data.md").contains("**last_loaded:** 2026-11-29T00:00:00Z"));
}

#[test]
fn bad_names_and_values_are_exit_2_and_change_nothing() {
    let dir = repo();
    let cases: [(&[&str], &str); 7] = [
        (&["--agent", "../x"], "invalid agent name"),
        (&["--agent", "/etc/passwd"], "invalid agent name"),
        (&["--agent", "a/b"], "invalid agent name"),
        (
            &["--agent", "data", "--include-wiki", "../secrets"],
            "must not contain '..'",
        ),
        (
            &["--agent", "data", "--include-wiki", "/etc/passwd"],
            "must not be an absolute path",
        ),
        (
            &["--agent", "data", "--situation", "panic"],
            "possible values: new-task, resuming",
        ),
        (
            &["--agent", "data", "--include-wiki", "nope"],
            "wiki topic \"nope\" not found",
        ),
    ];
    for (args, want) in cases {
        let mut full = vec!["memory", "spawn"];
        full.extend_from_slice(args);
        let o = squad(dir.path(), &full);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty());
    }
    let o = squad(
        dir.path(),
        &["memory", "scribe", "--agent", "data", "--now", "yesterday"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(read(dir.path(), "hot/data.md"), HOT);
}

#[test]
fn a_malformed_file_is_reported_by_validate_and_skipped_by_spawn() {
    let dir = repo();
    write(
        dir.path(),
        "cold/data.md",
        "intro\n\n### 2026-11-02: note: y\nbad \0 byte\n",
    );
    let o = squad(
        dir.path(),
        &[
            "memory",
            "spawn",
            "--agent",
            "data",
            "--situation",
            "resuming",
        ],
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("Current task: fix login"));
    assert!(
        stderr(&o).contains(".squad/memory/cold/data.md:4: line contains a NUL byte"),
        "{}",
        stderr(&o)
    );
    let o = squad(dir.path(), &["memory", "validate"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stdout(&o).starts_with(".squad/memory/cold/data.md:4: line contains a NUL byte"),
        "{}",
        stdout(&o)
    );
    assert!(stderr(&o).contains("1 problem in memory files"));
    let o = squad(dir.path(), &["memory", "scribe", "--agent", "data"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(read(dir.path(), "hot/data.md"), HOT, "nothing written");
}

#[test]
fn validate_passes_a_clean_tree_and_reports_oversize_files() {
    let dir = repo();
    // Files written by hand have no search index yet: a warning each, exit 0.
    let o = squad(dir.path(), &["memory", "validate"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        [
            ".squad/memory/.index/cold/data.idx:1: warning: the search index of cold/data.md is \
             missing or out of date (a spawn reads the text instead, which is slower); run \
             `squad memory index`\n",
            ".squad/memory/.index/wiki/auth.idx:1: warning: the search index of wiki/auth.md is \
             missing or out of date (a spawn reads the text instead, which is slower); run \
             `squad memory index`\n",
        ]
        .concat()
    );
    let o = squad(dir.path(), &["memory", "validate", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(
        v["problems"][1]["file"],
        ".squad/memory/.index/wiki/auth.idx"
    );
    assert_eq!(v["problems"][1]["level"], "warning");
    assert_eq!(
        squad(dir.path(), &["memory", "index"]).status.code(),
        Some(0)
    );
    let o = squad(dir.path(), &["memory", "validate", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v, serde_json::json!({"ok": true, "problems": []}));
    // An edit by hand makes the index stale; a file with an error gets no index warning.
    write(
        dir.path(),
        "cold/data.md",
        "### 2026-11-21: note: edited by hand\n",
    );
    write(dir.path(), "wiki/big.md", &"x".repeat(21 * 1024));
    let o = squad(dir.path(), &["memory", "validate"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stdout(&o),
        ".squad/memory/wiki/big.md:1: 21504 bytes, over the wiki cap of 20480 bytes; split it \
         into several topics\n\
         .squad/memory/.index/cold/data.idx:1: warning: the search index of cold/data.md is \
         missing or out of date (a spawn reads the text instead, which is slower); run \
         `squad memory index`\n"
    );
}

#[test]
fn scribe_reports_conserved_counts() {
    let dir = repo();
    write(
        dir.path(),
        "cold/data.md",
        "### 2026-09-01T00:00:00Z: decision: use postgres\n**id:** d1\n---\n### 2026-09-01T00:00:00Z: note: old\n**id:** n1\n---\n",
    );
    let o = squad(
        dir.path(),
        &[
            "memory",
            "scribe",
            "--agent",
            "data",
            "--now",
            "2026-11-30T12:00:00Z",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["before"], 2);
    assert_eq!(v["moved"]["cold->wiki"], 1);
    assert_eq!(v["moved"]["cold->archive"], 1);
    assert_eq!(
        v["before"].as_u64().unwrap(),
        v["kept"].as_u64().unwrap() + 2 + v["merged"].as_u64().unwrap()
    );
    assert!(read(dir.path(), "wiki/decisions.md").contains("**id:** d1"));
    assert!(read(dir.path(), "archive/data.md").contains("**id:** n1"));
    assert_eq!(read(dir.path(), "hot/data.md"), "");
}

#[test]
fn a_second_scribe_is_refused_while_one_holds_the_lock() {
    let dir = repo();
    let store = squad_memory::FsStore::new(dir.path().join(".squad"));
    let held = squad_memory::MemoryStore::lock(&store).unwrap();
    let o = squad(
        dir.path(),
        &["memory", "scribe", "--agent", "data", "--lock-timeout", "0"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(&format!(
            "the memory lock is held by pid {}",
            std::process::id()
        )),
        "{}",
        stderr(&o)
    );
    assert_eq!(read(dir.path(), "hot/data.md"), HOT);
    drop(held);
    let o = squad(dir.path(), &["memory", "scribe", "--agent", "data"]);
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn every_memory_command_has_help_with_an_example() {
    for sub in [
        "spawn",
        "scribe",
        "validate",
        "import",
        "add",
        "supersede",
        "search",
        "show",
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_squad"))
            .args(["memory", sub, "--help"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0));
        assert!(stdout(&o).contains("Example:"), "{sub}");
    }
}

#[test]
fn help_names_the_layout_the_caps_the_format_and_the_walkthrough() {
    let o = Command::new(env!("CARGO_BIN_EXE_squad"))
        .args(["memory", "--help"])
        .output()
        .unwrap();
    let help = stdout(&o);
    for want in [
        "memory/hot/<agent>.md",
        "memory/cold/<agent>.md",
        "memory/wiki/<topic>.md",
        "memory/archive/<agent>.md",
        "4 KiB",
        "64 KiB",
        "20 KiB",
        "**id:**",
        "squad memory import --agent data .squad/agents/data/history.md",
        "squad memory import --wiki decisions .squad/decisions.md",
        "squad memory spawn --agent data --situation resuming",
    ] {
        assert!(help.contains(want), "{want} missing from\n{help}");
    }
}

#[test]
fn the_three_command_walkthrough_works_on_a_real_history() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let agents = dir.path().join(".squad/agents/data");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("history.md"),
        "# DATA\n\n## Learnings\n\n### Release tarball without dist/ (#977) (2026-05-01)\n- Root cause: `npm publish` ran before `npm run build` — café\n\n### 2026-03-14: CLI entry point\n- walks up to `.git`\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join(".squad/decisions.md"),
        "# Decisions\n\n### 2026-03-14: Node 20 minimum\n**By:** Data\n**What:** engines >=20\n",
    )
    .unwrap();
    let o = squad(
        dir.path(),
        &[
            "memory",
            "import",
            "--agent",
            "data",
            ".squad/agents/data/history.md",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["lines_in"], v["lines_stored"]);
    assert_eq!(v["entries"], 2);
    assert!(v["warnings"].is_array());
    let o = squad(
        dir.path(),
        &[
            "memory",
            "import",
            "--wiki",
            "decisions",
            ".squad/decisions.md",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = squad(
        dir.path(),
        &[
            "memory",
            "spawn",
            "--agent",
            "data",
            "--situation",
            "post-incident",
            "--task",
            "why did the published package lack its build output",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("- Root cause: `npm publish` ran before `npm run build` — café"),
        "{}",
        stdout(&o)
    );
    // Twice changes nothing.
    let before = read(dir.path(), "cold/data.md");
    let o = squad(
        dir.path(),
        &[
            "memory",
            "import",
            "--agent",
            "data",
            ".squad/agents/data/history.md",
        ],
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("nothing to change"));
    assert_eq!(read(dir.path(), "cold/data.md"), before);
    let o = squad(dir.path(), &["memory", "validate"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn add_search_show_supersede_round_trip_with_json() {
    let dir = repo();
    let o = run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_squad"))
            .arg("-C")
            .arg(dir.path())
            .args(add_decision("keep RS256", &["--body-file", "-", "--json"])),
        Some("Keys rotate monthly.\n"),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(e["kind"], "decision");
    assert_eq!(e["body"], "Keys rotate monthly.");
    let id = e["id"].as_str().unwrap().to_owned();
    assert!(read(dir.path(), "hot/data.md").contains(&format!("**id:** {id}")));
    let o = squad(
        dir.path(),
        &[
            "memory",
            "search",
            "--agent",
            "data",
            "RS256 keys",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let hits: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(hits[0]["id"], id.as_str());
    for key in ["tier", "score", "title", "path"] {
        assert!(hits[0].get(key).is_some(), "{key}");
    }
    let o = squad(dir.path(), &["memory", "show", &id, "--json"]);
    let shown: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (shown["tier"].as_str(), shown["path"].as_str()),
        (Some("hot"), Some("hot/data.md"))
    );
    let o = squad(dir.path(), &["memory", "supersede", "c1", "--by", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(read(dir.path(), "cold/data.md").contains(&format!("**superseded_by:** {id}")));
    let o = squad(dir.path(), &["memory", "show", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    // Over the hot cap: refused, with the next step.
    let big = "x".repeat(5000);
    let o = squad(
        dir.path(),
        &[
            "memory", "add", "--agent", "data", "--kind", "note", "--title", "big", "--body", &big,
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("squad memory scribe --agent data"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn closed_sets_suggest_and_numbers_are_bounded() {
    let dir = repo();
    let cases: [(&[&str], &str); 5] = [
        (
            &["spawn", "--agent", "data", "--situation", "resume"],
            "'resuming'",
        ),
        (
            &[
                "add", "--agent", "data", "--kind", "decison", "--title", "t",
            ],
            "'decision'",
        ),
        (
            &["search", "--agent", "data", "q", "--tier", "archiv"],
            "'archive'",
        ),
        (
            &["search", "--agent", "data", "q", "--limit", "-1"],
            "-1 is out of range (1 to 1000)",
        ),
        (
            &["search", "--agent", "data", "q", "--limit", "100000"],
            "out of range (1 to 1000)",
        ),
    ];
    for (args, want) in cases {
        let mut full = vec!["memory"];
        full.extend_from_slice(args);
        let o = squad(dir.path(), &full);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).lines().count() <= 2, "{}", stderr(&o));
    }
}

#[cfg(unix)]
#[test]
fn symlinks_in_memory_are_never_followed_and_validate_names_them() {
    let dir = repo();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("outside.md"), "SECRET auth tokens\n").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("outside.md"),
        dir.path().join(".squad/memory/wiki/tokens.md"),
    )
    .unwrap();
    let o = squad(
        dir.path(),
        &[
            "memory",
            "spawn",
            "--agent",
            "data",
            "--situation",
            "onboarding",
            "--task",
            "auth tokens",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains("SECRET"));
    let o = squad(dir.path(), &["memory", "validate"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stdout(&o).contains(".squad/memory/wiki/tokens.md:1: is a symbolic link"),
        "{}",
        stdout(&o)
    );
    // A symlinked cold directory: the Scribe writes nothing through it.
    std::fs::remove_dir_all(dir.path().join(".squad/memory/cold")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join(".squad/memory/cold")).unwrap();
    let o = squad(dir.path(), &["memory", "scribe", "--agent", "data"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!outside.path().join("data.md").exists());
    assert_eq!(read(dir.path(), "hot/data.md"), HOT);
}

#[test]
fn outside_a_repository_memory_commands_say_so() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["memory", "spawn", "--agent", "data"][..],
        &["memory", "import", "--agent", "data", "x.md"][..],
    ] {
        let o = squad(dir.path(), args);
        assert_eq!(o.status.code(), Some(2));
        assert!(
            stderr(&o).contains("not a git repository"),
            "{}",
            stderr(&o)
        );
        assert!(!dir.path().join(".squad").exists());
    }
}

/// `script` runs a command on a pseudo-terminal: the import then shows its progress on stderr;
/// piped, it shows none.
#[test]
fn import_shows_progress_on_a_terminal_only() {
    let dir = repo();
    let history = dir.path().join("history.md");
    let mut text = String::from("# DATA\n\n## Learnings\n\n");
    for i in 0..200 {
        text.push_str(&format!(
            "### 2026-03-{:02}: Lesson {i}\n- text {i}\n\n",
            1 + i % 28
        ));
    }
    std::fs::write(&history, &text).unwrap();
    let cmd = format!(
        "{} -C {} memory import --agent data {}",
        env!("CARGO_BIN_EXE_squad"),
        dir.path().display(),
        history.display()
    );
    let o = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .expect("the `script` utility (util-linux) runs the command on a terminal");
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let tty = stdout(&o);
    assert!(tty.contains("memory import: "), "{tty:?}");
    assert!(tty.contains("402 lines in, 402 stored"), "{tty:?}");
    // Piped: the report, and no progress.
    let o = squad(
        dir.path(),
        &[
            "memory",
            "import",
            "--agent",
            "data",
            history.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("memory import: "), "{}", stderr(&o));
    assert!(stdout(&o).contains("nothing to change"), "{}", stdout(&o));
}

#[test]
fn index_rebuilds_the_search_indexes_and_spawn_is_the_same_with_them() {
    let dir = repo();
    let args = spawn_debugging("why does the staging deploy time out", &["--json"]);
    // Files written by hand: no index yet, and a read-only spawn writes none.
    let without = squad(dir.path(), &args);
    assert_eq!(without.status.code(), Some(0), "{}", stderr(&without));
    assert!(!dir.path().join(".squad/memory/.index").exists());
    let o = squad(dir.path(), &["memory", "index"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "indexed 2 memory files\n");
    assert!(
        dir.path()
            .join(".squad/memory/.index/cold/data.idx")
            .is_file()
    );
    assert!(
        dir.path()
            .join(".squad/memory/.index/wiki/auth.idx")
            .is_file()
    );
    let with = squad(dir.path(), &args);
    assert_eq!(stdout(&with), stdout(&without));
    let o = squad(dir.path(), &["memory", "index", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v,
        serde_json::json!({ "ok": true, "indexed": 2, "failed": [] })
    );
    // The index directory is not memory: validate finds nothing to say.
    let o = squad(dir.path(), &["memory", "validate"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
}

/// A symlink in place of an index, pointing outside the state directory, is neither written
/// through nor replaced: `memory index` counts only what it wrote, names the link and exits 1.
#[cfg(unix)]
#[test]
fn index_names_a_symlinked_index_exits_1_and_leaves_its_target_alone() {
    let dir = repo();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("elsewhere.idx");
    std::fs::write(&target, "not squad's\n").unwrap();
    let idx = dir.path().join(".squad/memory/.index/cold/data.idx");
    std::fs::create_dir_all(idx.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&target, &idx).unwrap();
    let o = squad(dir.path(), &["memory", "index"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stdout(&o), "indexed 1 memory file\n");
    let err = stderr(&o);
    assert!(
        err.starts_with(
            "error: 1 search index not written: .squad/memory/.index/cold/data.idx:1: is a symbolic link"
        ),
        "{err}"
    );
    assert_eq!(err.lines().count(), 2, "{err}");
    assert!(err.lines().nth(1).unwrap().starts_with("hint: "), "{err}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "not squad's\n");
    assert_eq!(std::fs::read_link(&idx).unwrap(), target);
    assert!(
        dir.path()
            .join(".squad/memory/.index/wiki/auth.idx")
            .is_file()
    );
    let o = squad(dir.path(), &["memory", "index", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["indexed"], 1, "{v}");
    assert_eq!(
        v["failed"][0]["file"], ".squad/memory/.index/cold/data.idx",
        "{v}"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "not squad's\n");
}
