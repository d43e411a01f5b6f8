//! `squad mcp` against the CLI: the round-trip time of `notes_show` and `memory_context` through
//! one running server (a `tools/call` line written to its stdin, the answer line read from its
//! stdout), against the same operation as one `squad --json` process per call
//! (`notes show --agent data`, `memory spawn --agent data --situation resuming --task …`).
//! Median (and p95) of 1,000 calls each, after 20 warm-up calls, and the ratio CLI / MCP.
//!
//! It runs the release binary: build it first (`cargo build --release -p squad-cli`), or point
//! `SQUAD_BIN` at one. The fixture, made at run time in a temporary directory: a repository with
//! one commit whose note in `refs/notes/squad/data` holds 20 entries, and agent `data`'s memory
//! with 8 hot entries and 60 imported cold entries.
//!
//! Measured 2026-12-01 on the shared 2-core machine (load average 4 to 4.5: other builds
//! running), two runs, median / p95 of 1,000 calls:
//!
//! | operation | through `squad mcp` | one CLI process per call | CLI / MCP |
//! |---|---|---|---|
//! | `notes_show` (20 entries) | 0.41 to 0.50 ms / 0.7 to 1.7 ms | 2.9 to 3.3 ms / 7.8 to 8.5 ms | 5.8x to 8.0x |
//! | `memory_context` (resuming, with a task) | 0.54 to 0.56 ms / 1.0 to 2.6 ms | 2.7 to 2.9 ms / 7.4 to 9.0 ms | 5.1x |
//!
//! The server opens the repository and reads the state files afresh on every call, as the CLI
//! does; what it saves is starting one process per call (exec, dynamic linking, the runtime and
//! argument parsing).
#![expect(
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench: a broken fixture stops it, and it prints its figures"
)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use squad_bench::squad_bin;

const CALLS: usize = 1_000;
const WARM_UP: usize = 20;
const TASK: &str = "the staging deploy times out after the token rotation";

struct Fixture {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    home: PathBuf,
    bin: PathBuf,
}

impl Fixture {
    fn squad(&self) -> Command {
        let mut c = Command::new(&self.bin);
        c.arg("-C")
            .arg(&self.repo)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN")
            .env_remove("SQUAD_WEBHOOK_URL");
        c
    }

    fn run(&self, args: &[&str]) -> Vec<u8> {
        let out = self.squad().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "squad {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    fn new(bin: PathBuf) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let git = |args: &[&str]| {
            let mut c = squad_bench::git_with_home(&repo, &home);
            c.args(args);
            squad_bench::run(c)
        };
        git(&["init", "-q", "-b", "main"]);
        git(&["config", "user.name", "Bench"]);
        git(&["config", "user.email", "bench@test.invalid"]);
        git(&["commit", "-q", "--allow-empty", "-m", "first"]);
        let f = Self {
            _tmp: tmp,
            repo,
            home,
            bin,
        };
        for i in 0..20 {
            let fields = json!({"decision": format!("Decision {i}: keep the token TTL at {i} hours"), "reasoning": "auth.go:47"});
            f.run(&[
                "notes",
                "write",
                "--agent",
                "data",
                "--type",
                "decision",
                "--fields",
                &fields.to_string(),
            ]);
        }
        for i in 0..8 {
            f.run(&[
                "memory",
                "add",
                "--agent",
                "data",
                "--kind",
                "note",
                "--title",
                &format!("Session note {i}: staging deploy step {i}"),
                "--body",
                "Checked the rollout logs; the VPN must be up.",
            ]);
        }
        let mut history = String::from("# History\n\n");
        for i in 0..60 {
            history.push_str(&format!(
                "### 2026-0{}-{:02}: Deploy incident {i}\nThe deploy of build {i} timed out after the token rotation; raised the timeout to {} s.\n\n",
                1 + i % 9,
                1 + i % 28,
                30 + i
            ));
        }
        let file = f.repo.join("history.md");
        std::fs::write(&file, history).unwrap();
        f.run(&["memory", "import", "--agent", "data", "history.md"]);
        f
    }
}

/// A running `squad mcp`, initialized.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn start(f: &Fixture) -> Self {
        let mut child = f
            .squad()
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Self {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        s.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
        );
        writeln!(
            s.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        s
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let line =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).unwrap();
        let v: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(v["id"], self.next_id, "{answer}");
        v
    }

    fn call(&mut self, tool: &str, args: &Value) -> Value {
        let v = self.request("tools/call", json!({"name": tool, "arguments": args}));
        assert_eq!(v["result"]["isError"], false, "{v}");
        v
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Median and 95th percentile of `CALLS` timed runs of `f`, after `WARM_UP` untimed ones.
fn measure(mut f: impl FnMut()) -> (Duration, Duration) {
    for _ in 0..WARM_UP {
        f();
    }
    let mut times: Vec<Duration> = (0..CALLS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    (times[CALLS / 2], times[CALLS * 95 / 100])
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs it once with nothing to do.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let Some(bin) = squad_bin() else {
        eprintln!("mcp bench skipped: build the binary first (cargo build --release -p squad-cli)");
        return;
    };
    let f = Fixture::new(bin);
    let mut server = Server::start(&f);
    let show_args = json!({"agent": "data"});
    let context_args = json!({"agent": "data", "situation": "resuming", "task": TASK});
    // The server answers what the CLI prints.
    let shown = server.call("notes_show", &show_args);
    let cli: Value =
        serde_json::from_slice(&f.run(&["--json", "notes", "show", "--agent", "data"])).unwrap();
    assert_eq!(shown["result"]["structuredContent"]["entries"], cli);
    assert_eq!(cli.as_array().unwrap().len(), 20);

    let cases: [(&str, &Value, &[&str]); 2] = [
        (
            "notes_show",
            &show_args,
            &["--json", "notes", "show", "--agent", "data"],
        ),
        (
            "memory_context",
            &context_args,
            &[
                "--json",
                "memory",
                "spawn",
                "--agent",
                "data",
                "--situation",
                "resuming",
                "--task",
                TASK,
            ],
        ),
    ];
    println!("squad mcp vs one CLI process per call, {CALLS} calls each (median / p95)");
    for (tool, args, cli_args) in cases {
        let (mcp_p50, mcp_p95) = measure(|| {
            server.call(tool, args);
        });
        let (cli_p50, cli_p95) = measure(|| {
            f.run(cli_args);
        });
        println!(
            "{tool:<15} mcp {:>9.1?} / {:>9.1?}   cli {:>9.1?} / {:>9.1?}   cli/mcp {:.1}x",
            mcp_p50,
            mcp_p95,
            cli_p50,
            cli_p95,
            cli_p50.as_secs_f64() / mcp_p50.as_secs_f64()
        );
    }
}
