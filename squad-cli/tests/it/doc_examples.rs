//! Every command example in `README.md`, `docs/*.md` and each crate's README runs as written.
//!
//! Why a small harness rather than trycmd: the documents show commands in ```` ```sh ```` blocks
//! that a reader copies into a shell, one after another, in one repository; most of them have no
//! output to compare, and several depend on the files an earlier block made. trycmd compares
//! output and runs each command alone. This harness runs the blocks of a file, in order, with
//! `bash` in one fresh repository per file (one commit, no remote, an empty `HOME`, no token in
//! the environment) with the `squad` under test first on `PATH`:
//!
//! - ```` ```sh ````: every command must exit 0, unless its comment starts with `exit <n>`
//!   (`squad … # exit 2: …`), when it must exit `<n>`. Shell variables and `cd` carry over
//!   within a block; lines ending in `\` continue the command.
//! - ```` ```console ````: `$ <command>` lines, each followed by the output it must print (stdout,
//!   then stderr), exactly.
//! - `<!-- doctest: skip: <reason> -->` right before a block skips it (it needs a network, installs
//!   something, or is the test command itself); skipped blocks are listed on stderr.
//! - `<!-- doctest: setup: <command> -->` right before a block runs `<command>` first, unseen,
//!   for inputs the prose names (a user's own `history.md`).
//! - A block of another language whose lines start with `squad ` or `$ squad ` is an error: it
//!   looks runnable, so it must be `sh` (or `console`) or say why it is skipped.
//!
//! A failure names the file, the line and the command, with its exit code and output.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one block may run.
const BLOCK_TIMEOUT: Duration = Duration::from_secs(120);

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The documents whose examples run: the README, `docs/*.md` and every member crate's README.
fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut docs = vec![root.join("README.md")];
    let mut more = Vec::new();
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            more.push(path);
        }
    }
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        if dir.join("Cargo.toml").is_file() && dir.join("README.md").is_file() {
            more.push(dir.join("README.md"));
        }
    }
    more.sort();
    docs.extend(more);
    docs
}

/// What a marker comment before a block says.
#[derive(Debug, Default, Clone)]
struct Markers {
    skip: Option<String>,
    setup: Vec<String>,
}

/// One fenced block.
#[derive(Debug)]
struct Block {
    lang: String,
    /// The 1-based line of the opening fence.
    fence_line: usize,
    lines: Vec<String>,
    markers: Markers,
}

/// The fenced blocks of a Markdown text, with the markers right before each.
fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut pending = Markers::default();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(block) = open.as_mut() {
            if trimmed.starts_with("```") {
                out.push(open.take().unwrap());
            } else {
                block.lines.push(line.to_owned());
            }
            continue;
        }
        if let Some(info) = trimmed.strip_prefix("```") {
            let lang = info.split([',', ' ']).next().unwrap_or("").to_owned();
            open = Some(Block {
                lang,
                fence_line: i + 1,
                lines: Vec::new(),
                markers: std::mem::take(&mut pending),
            });
        } else if let Some(rest) = trimmed
            .strip_prefix("<!-- doctest:")
            .and_then(|r| r.trim_end().strip_suffix("-->"))
        {
            let rest = rest.trim();
            if let Some(reason) = rest.strip_prefix("skip:") {
                pending.skip = Some(reason.trim().to_owned());
            } else if let Some(cmd) = rest.strip_prefix("setup:") {
                pending.setup.push(cmd.trim().to_owned());
            } else {
                panic!("line {}: unknown doctest marker {line:?}", i + 1);
            }
        } else if !trimmed.is_empty() {
            pending = Markers::default();
        }
    }
    assert!(open.is_none(), "a fenced block is never closed");
    out
}

/// A fresh repository for one document: one commit, no remote, a private git config and `HOME`.
struct Sandbox {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::write(
            home.join(".gitconfig"),
            "[user]\n\tname = Doc Reader\n\temail = reader@example.com\n[init]\n\tdefaultBranch = main\n",
        )
        .unwrap();
        let sandbox = Sandbox {
            _tmp: tmp,
            home,
            repo,
        };
        for args in [
            &["init", "-q"][..],
            &["commit", "-q", "--allow-empty", "-m", "first commit"][..],
        ] {
            let out = sandbox.command("git").args(args).output().unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
        }
        sandbox
    }

    /// `program` in the repository, with the sandbox's environment.
    fn command(&self, program: &str) -> Command {
        let bin = Path::new(env!("CARGO_BIN_EXE_squad")).parent().unwrap();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![bin.to_path_buf()];
        paths.extend(std::env::split_paths(&path));
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.repo)
            .env("PATH", std::env::join_paths(paths).unwrap())
            .env("HOME", &self.home)
            .env("GIT_CONFIG_GLOBAL", self.home.join(".gitconfig"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("NO_COLOR", "1")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .stdin(Stdio::null());
        for secret in [
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "GITHUB_API_URL",
            "SQUAD_WEBHOOK_URL",
            "SQUAD_WEBHOOK_SECRET",
            "RUST_LOG",
        ] {
            cmd.env_remove(secret);
        }
        cmd
    }

    /// Runs `script` with bash; returns (status, stdout, stderr), or a timeout message.
    fn bash(&self, script: &str) -> Result<(Option<i32>, String, String), String> {
        let mut child = self
            .command("bash")
            .arg("-c")
            .arg(script)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let out = std::thread::spawn(move || {
            let mut s = Vec::new();
            stdout.read_to_end(&mut s).map(|_| s)
        });
        let err = std::thread::spawn(move || {
            let mut s = Vec::new();
            stderr.read_to_end(&mut s).map(|_| s)
        });
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > BLOCK_TIMEOUT {
                child.kill().unwrap();
                child.wait().unwrap();
                return Err(format!("still running after {BLOCK_TIMEOUT:?}; killed"));
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let out = String::from_utf8_lossy(&out.join().unwrap().unwrap()).into_owned();
        let err = String::from_utf8_lossy(&err.join().unwrap().unwrap()).into_owned();
        Ok((status.code(), out, err))
    }
}

/// The exit code a `# exit <n>` comment asks for, else 0.
fn expected_exit(command: &str) -> i32 {
    // The comment starts at the last ` #` outside quotes; examples keep `#` out of their quotes.
    let Some(at) = command.rfind(" #") else {
        return 0;
    };
    let comment = command[at + 2..].trim_start();
    comment
        .strip_prefix("exit ")
        .and_then(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .unwrap_or(0)
}

const MARK: &str = "@@doctest@@";

/// Runs one `sh` block; a failure is described in `failures`.
fn run_sh(sandbox: &Sandbox, file: &str, block: &Block, failures: &mut Vec<String>) {
    // Logical commands: (first line, text), joining `\` continuations.
    let mut commands: Vec<(usize, String)> = Vec::new();
    let mut continuing = false;
    for (i, line) in block.lines.iter().enumerate() {
        let line_no = block.fence_line + 1 + i;
        if continuing {
            let last = commands.last_mut().unwrap();
            last.1.push('\n');
            last.1.push_str(line);
        } else if !line.trim().is_empty() && !line.trim_start().starts_with('#') {
            commands.push((line_no, line.clone()));
        }
        continuing = line.trim_end().ends_with('\\');
    }
    let mut script = String::from("set -o pipefail\n");
    for setup in &block.markers.setup {
        script.push_str(&format!(
            "{setup}\n__rc=$?; if [ $__rc -ne 0 ]; then echo '{MARK} setup failed' $__rc >&2; exit 99; fi\n"
        ));
    }
    for (n, command) in &commands {
        let want = expected_exit(command);
        script.push_str(&format!(
            "echo '{MARK} {n}'; echo '{MARK} {n}' >&2\n{command}\n"
        ));
        script.push_str(&format!(
            "__rc=$?; if [ $__rc -ne {want} ]; then echo '{MARK} fail {n}' $__rc >&2; exit 99; fi\n"
        ));
    }
    let (status, out, err) = match sandbox.bash(&script) {
        Ok(result) => result,
        Err(why) => {
            failures.push(format!("{file}:{}: the block {why}", block.fence_line));
            return;
        }
    };
    if status == Some(0) {
        return;
    }
    // The failing command's own output: what follows its marker.
    let after = |text: &str, n: usize| -> String {
        let mark = format!("{MARK} {n}\n");
        let tail = text
            .rfind(&mark)
            .map_or(text, |at| &text[at + mark.len()..]);
        tail.lines()
            .filter(|l| !l.starts_with(MARK))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let failed = err
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{MARK} fail ")))
        .and_then(|rest| {
            let mut parts = rest.split_whitespace();
            Some((
                parts.next()?.parse::<usize>().ok()?,
                parts.next()?.to_owned(),
            ))
        });
    match failed {
        Some((n, code)) => {
            let command = &commands.iter().find(|(l, _)| *l == n).unwrap().1;
            let want = expected_exit(command);
            failures.push(format!(
                "{file}:{n}: `{}` exited {code}, expected {want}\n--- its stdout ---\n{}\n--- its stderr ---\n{}",
                command.trim(),
                after(&out, n),
                after(&err, n)
            ));
        }
        None => failures.push(format!(
            "{file}:{}: the block failed (status {status:?}) before its commands ran\n--- stderr ---\n{err}",
            block.fence_line
        )),
    }
}

/// Runs one `console` block: each `$ command` must print exactly the lines under it.
fn run_console(sandbox: &Sandbox, file: &str, block: &Block, failures: &mut Vec<String>) {
    let mut steps: Vec<(usize, String, Vec<String>)> = Vec::new();
    for (i, line) in block.lines.iter().enumerate() {
        if let Some(command) = line.strip_prefix("$ ") {
            steps.push((block.fence_line + 1 + i, command.to_owned(), Vec::new()));
        } else if let Some(step) = steps.last_mut() {
            step.2.push(line.clone());
        } else {
            failures.push(format!(
                "{file}:{}: a console block starts with output, not a `$ ` command",
                block.fence_line + 1 + i
            ));
            return;
        }
    }
    for (n, command, expected) in steps {
        let (_, out, err) = match sandbox.bash(&command) {
            Ok(result) => result,
            Err(why) => {
                failures.push(format!("{file}:{n}: `{command}` {why}"));
                return;
            }
        };
        let got: Vec<&str> = out.lines().chain(err.lines()).collect();
        let want: Vec<&str> = expected.iter().map(|l| l.trim_end()).collect();
        let got_trimmed: Vec<&str> = got.iter().map(|l| l.trim_end()).collect();
        if got_trimmed != want {
            failures.push(format!(
                "{file}:{n}: `{command}` printed other output than the document shows\n--- document ---\n{}\n--- printed ---\n{}",
                want.join("\n"),
                got_trimmed.join("\n")
            ));
        }
    }
}

/// Whether a line of a non-runnable block looks like a command to type.
fn looks_runnable(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("squad ") || line.starts_with("$ squad ")
}

#[test]
fn every_command_example_in_the_docs_runs_as_written() {
    let root = root();
    let mut failures = Vec::new();
    let mut ran = 0;
    let mut skipped = Vec::new();
    for path in documents() {
        let file = path.strip_prefix(&root).unwrap().display().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut sandbox: Option<Sandbox> = None;
        for block in blocks(&text) {
            let runnable = matches!(block.lang.as_str(), "sh" | "console");
            if let Some(reason) = &block.markers.skip {
                skipped.push(format!("{file}:{}: {reason}", block.fence_line));
                continue;
            }
            if !runnable {
                if let Some(i) = block.lines.iter().position(|l| looks_runnable(l)) {
                    failures.push(format!(
                        "{file}:{}: a command example in a ```{} block: make it ```sh (or ```console), or put `<!-- doctest: skip: <reason> -->` before it",
                        block.fence_line + 1 + i,
                        block.lang
                    ));
                }
                continue;
            }
            let sandbox = sandbox.get_or_insert_with(Sandbox::new);
            ran += 1;
            if block.lang == "sh" {
                run_sh(sandbox, &file, &block, &mut failures);
            } else {
                run_console(sandbox, &file, &block, &mut failures);
            }
        }
    }
    eprintln!("doc examples: {ran} blocks ran, {} skipped:", skipped.len());
    for s in &skipped {
        eprintln!("  skipped {s}");
    }
    assert!(
        ran > 0,
        "no example ran: is the harness reading the documents?"
    );
    assert!(
        failures.is_empty(),
        "{} doc example(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_harness_reads_blocks_markers_and_exit_comments() {
    let doc = "text\n\n<!-- doctest: skip: needs a network -->\n```sh\nsquad a\n```\n\n<!-- doctest: setup: touch x -->\n\n```console\n$ squad b\nout\n```\n\nprose\n```text\nsquad c\n```\n";
    let found = blocks(doc);
    assert_eq!(found.len(), 3);
    assert_eq!(found[0].lang, "sh");
    assert_eq!(found[0].fence_line, 4);
    assert_eq!(found[0].markers.skip.as_deref(), Some("needs a network"));
    assert_eq!(found[1].markers.setup, ["touch x"]);
    assert!(found[1].markers.skip.is_none());
    assert!(found[2].markers.skip.is_none() && found[2].markers.setup.is_empty());
    assert_eq!(expected_exit("squad x --y   # exit 2: refused"), 2);
    assert_eq!(expected_exit("squad x   # exits early"), 0);
    assert_eq!(expected_exit("squad x"), 0);
}

#[test]
fn a_failing_example_is_reported_with_its_file_line_and_command() {
    let sandbox = Sandbox::new();
    let doc = "# t\n\n```sh\ntrue\nsquad notes show --agent 'Bad Name'\ntrue\n```\n";
    let mut failures = Vec::new();
    for block in blocks(doc) {
        run_sh(&sandbox, "t.md", &block, &mut failures);
    }
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0]
            .starts_with("t.md:5: `squad notes show --agent 'Bad Name'` exited 2, expected 0"),
        "{}",
        failures[0]
    );
    assert!(failures[0].contains("error:"), "{}", failures[0]);
    // A `&&` list that fails on its left side fails too (a plain `set -e` would let it pass).
    let doc = "```sh\nfalse && true\n```\n";
    let mut failures = Vec::new();
    run_sh(&sandbox, "t.md", &blocks(doc)[0], &mut failures);
    assert_eq!(failures.len(), 1, "{failures:?}");
    // The expected exit code of a refused command.
    let doc = "```sh\nsquad notes show --agent 'Bad Name'   # exit 2: a bad name\n```\n";
    let mut failures = Vec::new();
    run_sh(&sandbox, "t.md", &blocks(doc)[0], &mut failures);
    assert!(failures.is_empty(), "{failures:?}");
    // A console block whose output differs.
    let doc = "```console\n$ echo hi\nho\n```\n";
    let mut failures = Vec::new();
    run_console(&sandbox, "t.md", &blocks(doc)[0], &mut failures);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].starts_with("t.md:2: `echo hi`"),
        "{}",
        failures[0]
    );
}
