//! Concurrent memory writers (`memory add`, `supersede`, `import`, `scribe`, `spawn --touch`,
//! the MCP `memory_add`) take turns for the memory lock in arrival order, up to
//! `--lock-timeout`, across real processes.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use squad_memory::{FsStore, MemoryStore};

use crate::git_repo::Repo;

fn cmd(repo: &Repo, args: &[&str]) -> Command {
    let mut c = repo.command(args);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

fn start(repo: &Repo, args: &[&str]) -> Child {
    cmd(repo, args).spawn().unwrap()
}

fn add_args(title: &str) -> Vec<String> {
    [
        "memory", "add", "--agent", "data", "--kind", "note", "--title", title,
    ]
    .iter()
    .map(ToString::to_string)
    .collect()
}

fn start_add(repo: &Repo, title: &str, extra: &[&str]) -> Child {
    let mut args = add_args(title);
    args.extend(extra.iter().map(ToString::to_string));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    start(repo, &args)
}

fn finish(child: Child) -> Output {
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn memory(repo: &Repo) -> std::path::PathBuf {
    repo.path().join(".squad/memory")
}

/// Every memory file's text, joined.
fn all_memory(repo: &Repo) -> String {
    let mut out = String::new();
    for tier in ["hot", "cold", "wiki", "archive"] {
        let Ok(dir) = std::fs::read_dir(memory(repo).join(tier)) else {
            continue;
        };
        for f in dir {
            out.push_str(&std::fs::read_to_string(f.unwrap().path()).unwrap());
        }
    }
    out
}

/// The store the test process holds the lock with, as `command` would.
fn holder(repo: &Repo, command: &str) -> FsStore {
    FsStore::new(repo.path().join(".squad")).with_lock_command(command)
}

/// Waits (up to 60 s) until `pid` has a live ticket in the queue.
fn until_queued(store: &FsStore, pid: u32) {
    let start = Instant::now();
    while !store
        .lock_queue()
        .unwrap()
        .iter()
        .any(|t| t.pid == pid && t.alive)
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "process {pid} never queued"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[track_caller]
fn assert_each_id_once(repo: &Repo, outputs: &[Output]) {
    let all = all_memory(repo);
    for o in outputs {
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let id = text(&o.stdout).trim().to_owned();
        assert_eq!(
            all.matches(&format!("**id:** {id}\n")).count(),
            1,
            "{id} in:\n{all}"
        );
    }
}

#[test]
fn twenty_four_concurrent_adds_all_succeed_and_each_entry_exists_once() {
    let repo = Repo::new();
    let children: Vec<Child> = (0..24)
        .map(|i| start_add(&repo, &format!("entry {i}"), &[]))
        .collect();
    let outputs: Vec<Output> = children.into_iter().map(finish).collect();
    for o in &outputs {
        assert!(
            o.stderr.is_empty(),
            "no error, no warning: {}",
            text(&o.stderr)
        );
    }
    assert_each_id_once(&repo, &outputs);
    let hot = std::fs::read_to_string(memory(&repo).join("hot/data.md")).unwrap();
    for i in 0..24 {
        assert_eq!(hot.matches(&format!("note: entry {i}\n")).count(), 1);
    }
    assert!(
        holder(&repo, "").lock_queue().unwrap().is_empty(),
        "no ticket is left behind"
    );
}

#[test]
fn sixteen_adds_racing_two_scribes_all_succeed_and_each_entry_exists_once() {
    let repo = Repo::new();
    let mut adds = Vec::new();
    let mut scribes = Vec::new();
    for i in 0..16 {
        adds.push(start_add(&repo, &format!("entry {i}"), &[]));
        if i == 5 || i == 11 {
            scribes.push(start(&repo, &["memory", "scribe", "--agent", "data"]));
        }
    }
    let adds: Vec<Output> = adds.into_iter().map(finish).collect();
    for s in scribes.into_iter().map(finish) {
        assert_eq!(s.status.code(), Some(0), "{}", text(&s.stderr));
    }
    assert_each_id_once(&repo, &adds);
    let all = all_memory(&repo);
    for i in 0..16 {
        assert_eq!(
            all.matches(&format!("note: entry {i}\n")).count(),
            1,
            "entry {i}"
        );
    }
}

#[test]
fn writers_get_the_lock_in_the_order_they_arrived() {
    let repo = Repo::new();
    let store = holder(&repo, "squad memory scribe --agent data");
    let held = store.lock().unwrap();
    let mut children = Vec::new();
    for i in 0..5 {
        let child = start_add(&repo, &format!("arrival {i}"), &[]);
        // The next one starts only once this one is in line.
        until_queued(&store, child.id());
        children.push(child);
    }
    let queue = store.lock_queue().unwrap();
    assert_eq!(queue.len(), 6);
    assert!(
        queue[1..]
            .iter()
            .all(|t| t.command == "squad memory add --agent data")
    );
    drop(held);
    let outputs: Vec<Output> = children.into_iter().map(finish).collect();
    assert_each_id_once(&repo, &outputs);
    let hot = std::fs::read_to_string(memory(&repo).join("hot/data.md")).unwrap();
    let order: Vec<usize> = (0..5)
        .map(|i| hot.find(&format!("note: arrival {i}\n")).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{hot}");
}

#[test]
fn a_wait_that_runs_out_exits_1_naming_the_holder_command_and_pid() {
    let repo = Repo::new();
    let before = repo.squad(
        &add_args("first")
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(before.status.code(), Some(0));
    let hot_before = std::fs::read_to_string(memory(&repo).join("hot/data.md")).unwrap();
    let me = std::process::id();
    for (holding, waiter) in [
        ("squad memory scribe --agent data", add_args("late")),
        (
            "squad memory add --agent worf",
            ["memory", "scribe", "--agent", "data"]
                .map(String::from)
                .to_vec(),
        ),
    ] {
        let store = holder(&repo, holding);
        let held = store.lock().unwrap();
        let mut args = waiter.clone();
        args.extend(["--lock-timeout", "1"].map(String::from));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = repo.squad(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = text(&o.stderr);
        assert!(
            err.contains(&format!("held by `{holding}` (pid {me})")),
            "{err}"
        );
        assert!(err.contains("1 s"), "{err}");
        assert_eq!(err.matches("error:").count(), 1, "{err}");
        assert_eq!(err.matches("held by").count(), 1, "said once: {err}");
        if holding.contains("add") {
            assert!(!err.contains("Scribe"), "no Scribe runs: {err}");
        }
        assert_eq!(
            std::fs::read_to_string(memory(&repo).join("hot/data.md")).unwrap(),
            hot_before
        );
        assert_eq!(store.lock_queue().unwrap().len(), 1, "the waiter left");
        drop(held);
    }
}

#[test]
fn every_writing_command_waits_for_the_lock_and_gives_up_when_told() {
    let repo = Repo::new();
    let first = repo.squad(
        &add_args("one")
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let second = repo.squad(
        &add_args("two")
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let (a, b) = (
        text(&first.stdout).trim().to_owned(),
        text(&second.stdout).trim().to_owned(),
    );
    std::fs::write(repo.path().join("history.md"), "### Old\nbody\n").unwrap();
    // A cold entry the spawn loads, so that --touch has something to record.
    std::fs::write(
        memory(&repo).join("cold/data.md"),
        "### 2026-11-20T00:00:00Z: note: staging deploy timeout\n**id:** c1\n---\n",
    )
    .unwrap_or_else(|_| {
        std::fs::create_dir_all(memory(&repo).join("cold")).unwrap();
        std::fs::write(
            memory(&repo).join("cold/data.md"),
            "### 2026-11-20T00:00:00Z: note: staging deploy timeout\n**id:** c1\n---\n",
        )
        .unwrap();
    });
    let commands: Vec<Vec<&str>> = vec![
        vec![
            "memory", "add", "--agent", "data", "--kind", "note", "--title", "x",
        ],
        vec!["memory", "supersede", &a, "--by", &b],
        vec!["memory", "import", "--agent", "data", "history.md"],
        vec!["memory", "scribe", "--agent", "data"],
        vec![
            "memory",
            "spawn",
            "--agent",
            "data",
            "--situation",
            "resuming",
            "--task",
            "deploy timeout",
            "--touch",
        ],
    ];
    let store = holder(&repo, "squad memory scribe --agent data");
    let snapshot = all_memory(&repo);
    let held = store.lock().unwrap();
    for c in &commands {
        let mut args = c.clone();
        args.extend(["--lock-timeout", "0"]);
        let o = repo.squad(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("held by `squad memory scribe --agent data`"),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
    assert_eq!(all_memory(&repo), snapshot, "nothing changed");
    // Each waits its turn: started while the lock is held, each finishes once it is released.
    let children: Vec<Child> = commands.iter().map(|c| start(&repo, c)).collect();
    for c in &children {
        until_queued(&store, c.id());
    }
    drop(held);
    for (c, child) in commands.iter().zip(children) {
        let o = finish(child);
        assert_eq!(o.status.code(), Some(0), "{c:?}: {}", text(&o.stderr));
    }
}

#[test]
fn a_lock_timeout_out_of_range_is_exit_2_and_changes_nothing() {
    let repo = Repo::new();
    for bad in ["3601", "-1", "abc", "", "1.5", "99999999999999999999"] {
        for c in [
            vec![
                "memory", "add", "--agent", "data", "--kind", "note", "--title", "x",
            ],
            vec!["memory", "supersede", "h-1", "--by", "h-2"],
            vec!["memory", "import", "--agent", "data", "history.md"],
            vec!["memory", "scribe", "--agent", "data"],
            vec!["memory", "spawn", "--agent", "data", "--touch"],
        ] {
            let mut args = c.clone();
            args.extend(["--lock-timeout", bad]);
            let o = repo.squad(&args);
            assert_eq!(o.status.code(), Some(2), "{args:?}");
            assert!(text(&o.stderr).contains("--lock-timeout"), "{args:?}");
        }
    }
    assert!(!repo.path().join(".squad").exists(), "nothing was written");
}

#[test]
fn a_killed_waiter_blocks_nobody_and_doctor_clears_what_it_leaves() {
    let repo = Repo::new();
    let store = holder(&repo, "squad memory scribe --agent data");
    let held = store.lock().unwrap();
    let mut killed = start_add(&repo, "killed", &["--lock-timeout", "600"]);
    until_queued(&store, killed.id());
    killed.kill().unwrap(); // SIGKILL
    killed.wait().unwrap();
    // Its ticket stays, dead, ahead of the next writer.
    let queue = store.lock_queue().unwrap();
    assert_eq!(queue.len(), 2);
    assert!(!queue[1].alive && queue[1].pid == killed.id());
    let next = start_add(&repo, "next", &["--lock-timeout", "5"]);
    until_queued(&store, next.id());
    drop(held);
    let o = finish(next);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let all = all_memory(&repo);
    assert!(all.contains("note: next\n") && !all.contains("note: killed"));
    assert!(
        store.lock_queue().unwrap().is_empty(),
        "the dead ticket was removed"
    );

    // A killed waiter nobody came after: doctor reports its ticket, --fix removes it.
    let held = store.lock().unwrap();
    let mut killed = start_add(&repo, "killed again", &["--lock-timeout", "600"]);
    until_queued(&store, killed.id());
    killed.kill().unwrap();
    killed.wait().unwrap();
    drop(held);
    let o = repo.squad(&["doctor"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    let out = text(&o.stdout);
    assert!(
        out.contains("dead lock ticket: memory/.lock-queue/")
            && out.contains(&format!(
                "process {}, `squad memory add --agent data`, is gone",
                killed.id()
            )),
        "{out}"
    );
    let o = repo.squad(&["--json", "doctor", "--fix"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["healthy"], true, "{v}");
    assert!(
        v["fixed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f.as_str().unwrap().contains("removed dead lock ticket")),
        "{v}"
    );
    assert!(store.lock_queue().unwrap().is_empty());
    let o = repo.squad(&["doctor"]);
    assert_eq!(text(&o.stdout), "all is well\n");
}

#[test]
fn add_json_reports_the_line_of_the_entry() {
    let repo = Repo::new();
    let mut lines = Vec::new();
    for title in ["one", "two", "three"] {
        let mut args = vec!["--json".to_owned()];
        args.extend(add_args(title));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = repo.squad(&args);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        lines.push(v["line"].as_u64().unwrap() as usize);
    }
    let hot = std::fs::read_to_string(memory(&repo).join("hot/data.md")).unwrap();
    let hot: Vec<&str> = hot.lines().collect();
    for (line, title) in lines.iter().zip(["one", "two", "three"]) {
        assert!(
            *line >= 1 && hot[line - 1].ends_with(&format!("note: {title}")),
            "{line} {hot:?}"
        );
    }
}

#[tokio::test]
async fn mcp_memory_add_waits_its_turn_and_names_the_holder_when_it_gives_up() {
    let repo = Repo::new();
    let mut c = Command::new(env!("CARGO_BIN_EXE_squad"));
    c.arg("-C").arg(repo.path()).arg("mcp");
    repo.env(&mut c);
    let (transport, _) = TokioChildProcess::builder(tokio::process::Command::from(c))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.unwrap();
    let call = |args: Value| {
        let Value::Object(args) = args else {
            unreachable!()
        };
        client.call_tool(CallToolRequestParams::new("memory_add").with_arguments(args))
    };
    let store = holder(&repo, "squad memory scribe --agent data");
    let held = store.lock().unwrap();
    let r = call(json!({"agent": "data", "kind": "note", "title": "x", "lock_timeout": 0}))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let s = r.structured_content.unwrap();
    assert_eq!(s["exit_code"], 1);
    assert!(
        s["error"].as_str().unwrap().contains(&format!(
            "held by `squad memory scribe --agent data` (pid {})",
            std::process::id()
        )),
        "{s}"
    );
    for bad in [json!(3601), json!(-1), json!("30")] {
        let r = call(json!({"agent": "data", "kind": "note", "title": "x", "lock_timeout": bad}))
            .await
            .unwrap();
        assert_eq!(r.is_error, Some(true), "{bad}");
        assert_eq!(r.structured_content.unwrap()["exit_code"], 2, "{bad}");
    }
    // Started while the lock is held, it waits in line and gets its turn on release.
    let peer = client.peer().clone();
    let waiting = tokio::spawn(async move {
        let Value::Object(args) = json!({"agent": "data", "kind": "note", "title": "waited"})
        else {
            unreachable!()
        };
        peer.call_tool(CallToolRequestParams::new("memory_add").with_arguments(args))
            .await
    });
    let start = Instant::now();
    while !store
        .lock_queue()
        .unwrap()
        .iter()
        .any(|t| t.alive && t.command == "squad mcp memory_add --agent data")
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the tool never queued"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(held);
    let r = waiting.await.unwrap().unwrap();
    assert_eq!(r.is_error, Some(false), "{r:?}");
    let entry = r.structured_content.unwrap();
    assert_eq!(entry["title"], "waited");
    assert!(entry["line"].as_u64().unwrap() >= 1);
    client.cancel().await.unwrap();
}
