//! The `squad` command-line tool. See the crate README and `squad --help`.
// The doc comments of clap arguments are the --help text, where `<cmd>` and `[:port]` are
// placeholders, not HTML tags or intra-doc links.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]
mod approval_cmd;
mod ctx;
mod doctor_cmd;
mod logging;
mod mcp;
mod memory_cmd;
mod notes_cmd;
mod notes_promote_cmd;
mod notes_setup_cmd;
mod notes_sync_cmd;
mod route_briefing_cmd;
mod route_cmd;
mod schema_cmd;
mod shell_cmd;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::ctx::Ctx;

/// mimalloc, as the benches use: `notes list` on 100k notes makes some 600k small
/// allocations, and glibc's allocator costs about a fifth more time there. Its version 2 (the
/// `v2` feature): version 3 returns freed memory to the system a second after it is freed
/// (`purge_delay`), version 2 after 10 ms, and a `notes list` frees and allocates its windows
/// faster than that: its peak anonymous memory at 100k notes was 50 to 55 MiB with version 3,
/// 36 to 39 MiB with version 2, in the same time (a heap profile under glibc's allocator peaks
/// at 29 MB). Built without asking for transparent huge pages (`no_thp`; see `main`).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  failure (nothing half-written)
  2  bad usage or invalid input (nothing changed)
  3-6  `squad approval wait` only: 3 changes requested, 4 stopped, 5 still pending, 6 expired";

/// Building blocks for a squad of AI agents: notes, approval gates, memory and routing.
#[derive(Debug, Parser)]
#[command(name = "squad", version, about, after_help = EXIT_CODES)]
struct Cli {
    #[command(flatten)]
    globals: Globals,

    #[command(subcommand)]
    command: Command,
}

/// The options of `squad` itself, before (or, for the global ones, after) the command.
#[derive(Debug, clap::Args)]
struct Globals {
    /// Run as if started in PATH (like `git -C`).
    #[arg(short = 'C', value_name = "PATH")]
    dir: Option<std::path::PathBuf>,

    /// Keep squad state (.squad/) in DIR instead of the repository root.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<std::path::PathBuf>,

    /// Print machine-readable JSON on stdout.
    #[arg(long, global = true)]
    json: bool,

    /// Log what the libraries do to stderr: -v for their steps (fetch, push, promotion, GitHub
    /// requests, webhook deliveries, Scribe runs), -vv for details. `RUST_LOG` overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Commit-scoped agent notes under refs/notes/squad/AGENT: write, show, list, setup, sync, promote,
    /// archive, carry, verify.
    Notes(notes_cmd::Args),
    /// Print a JSON Schema shipped with squad.
    Schema(schema_cmd::Args),
    /// Tiered agent memory: spawn (a prompt's memory context), scribe, validate, import, add, supersede,
    /// search, show, index.
    Memory(memory_cmd::Args),
    /// Approval gates: configure the channel, request a gate, wait for a human's decision; status,
    /// acknowledge-tamper.
    #[command(
        subcommand,
        after_help = "Example:\n  squad approval configure --channel in-chat\n  squad approval request --mode autopilot --trigger risk-gate --topic \"Drop the users table\" --awaiting approval --detail \"Migration 42\"\n  echo /approve | squad approval wait"
    )]
    Approval(approval_cmd::Cmd),
    /// The squad routing rules over traces: replay, briefing (the leader's), generate, simulate
    /// (compare policies), migrate (a PostgreSQL database's schema).
    Route(route_cmd::Args),
    /// Report (and with --fix repair) what killed processes left: stale locks, temporary files,
    /// interrupted batches; and a tampered log or symlinks under the state directory.
    Doctor(doctor_cmd::Args),
    /// Serve notes, memory, approval gates and routing to an agent harness over the Model
    /// Context Protocol (stdin/stdout).
    Mcp(mcp::Args),
    /// Print a shell completion script (e.g. `squad completions bash > /etc/bash_completion.d/squad`).
    Completions {
        /// The shell to complete in.
        #[arg(value_enum, value_name = "shell")]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) of squad or of one command (`squad man notes write`), or write
    /// every page with --dir.
    #[command(
        after_help = "Example:\n  squad man > squad.1 && man ./squad.1\n  squad man notes write > squad-notes-write.1\n  squad man --dir man1"
    )]
    Man(shell_cmd::ManArgs),
}

/// The command line as users see it: [`Cli`] with every value name in one style, lowercase with
/// dashes (`<file>`, `<issues-per-squad>`, `<command>`), as the contract writes them; derived
/// names would be upper case (`<FILE>`) next to the lowercase ones the flags spell out.
fn command() -> clap::Command {
    fn lowercase(cmd: clap::Command) -> clap::Command {
        cmd.subcommand_value_name("command")
            .mut_subcommands(lowercase)
            .mut_args(|arg| {
                let names: Vec<String> = arg
                    .get_value_names()
                    .unwrap_or_default()
                    .iter()
                    .map(|n| n.as_str().to_lowercase().replace('_', "-"))
                    .collect();
                if names.is_empty() {
                    arg
                } else {
                    arg.value_names(names)
                }
            })
    }
    lowercase(Cli::command())
}

/// Parses the command line with [`command`].
///
/// Value names only show in help, usage and errors, never in what a command line parses to:
/// a command line that parses (or asks for the version) is parsed with the derived command as
/// it is, and only one that does not (or asks for help) is parsed again with [`command`], for
/// its message. Restyling every argument of every subcommand costs each run otherwise.
///
/// Before that, [`parse_one`] tries the command alone: building every subcommand's arguments
/// is most of the parse (about 0.4 ms of a `memory spawn`).
fn parse() -> Result<Cli, clap::Error> {
    use clap::FromArgMatches;
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(cli) = parse_one(&args) {
        return Ok(cli);
    }
    match Cli::command().try_get_matches_from(&args) {
        Ok(matches) => {
            if let Ok(cli) = Cli::from_arg_matches(&matches) {
                return Ok(cli);
            }
        }
        // The version names no argument.
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayVersion => return Err(e),
        Err(_) => {}
    }
    let matches = command().try_get_matches_from(&args)?;
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command()))
}

/// `args` parsed with a `squad` that has only the command they name (the first of their words
/// that [`one_command`] knows): `Some` only when that parse succeeds, and then it gives
/// what the whole command gives, since the options of `squad` and of the command are built by
/// the same code (test `parse_one_agrees_with_the_whole_command`). Anything else (help, the
/// version, an error, another command, a command named as an option's value) is `None`, for
/// the whole command to parse and word.
fn parse_one(args: &[std::ffi::OsString]) -> Option<Cli> {
    use clap::FromArgMatches;
    let sub = args.iter().skip(1).find_map(|a| one_command(a.to_str()?))?;
    let cmd = <Globals as clap::Args>::augment_args(clap::Command::new("squad"))
        .subcommand(sub)
        .subcommand_required(true);
    let matches = cmd.try_get_matches_from(args).ok()?;
    Cli::from_arg_matches(&matches).ok()
}

/// The command `name` as [`parse_one`] parses it alone, for the commands whose arguments are
/// one struct; `None` for any other word.
fn one_command(name: &str) -> Option<clap::Command> {
    use clap::Args as _;
    let sub = |name: &'static str| clap::Command::new(name);
    Some(match name {
        "notes" => notes_cmd::Args::augment_args(sub("notes")),
        "schema" => schema_cmd::Args::augment_args(sub("schema")),
        "memory" => memory_cmd::Args::augment_args(sub("memory")),
        "route" => route_cmd::Args::augment_args(sub("route")),
        "doctor" => doctor_cmd::Args::augment_args(sub("doctor")),
        "mcp" => mcp::Args::augment_args(sub("mcp")),
        _ => return None,
    })
}

fn main() -> ExitCode {
    // No transparent huge pages: where the system grants them, every touched 2 MiB of heap is
    // resident and zeroed whole. A `notes list` of 100k notes peaked at 135 MiB with them and
    // 100 MiB without, no slower; a `memory spawn` on a 1.4 MB squad zeroed five of them
    // (10 MiB) for a heap that peaks at 2 MiB. mimalloc is built without asking for them
    // (its `no_thp` feature: the first allocation, before `main`, used to fault in and zero a
    // whole huge page, some 0.1 ms of every command); this flag covers systems that grant
    // them unasked (`always`), from here on. Best effort: a kernel without the flag keeps its
    // default.
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_thp_disable(true);
    let cli = match parse() {
        Ok(cli) => cli,
        // The version is printed as it is: no need for the restyled command.
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayVersion => {
            return ctx::report_usage_error(&e, &Cli::command());
        }
        Err(e) => return ctx::report_usage_error(&e, &command()),
    };
    logging::init(cli.globals.verbose);
    let ctx = match Ctx::new(cli.globals.dir, cli.globals.state_dir, cli.globals.json) {
        Ok(ctx) => ctx,
        Err(e) => return e.report(),
    };
    let result = match cli.command {
        Command::Notes(args) => notes_cmd::run(&args, &ctx),
        Command::Schema(args) => schema_cmd::run(&args, &ctx),
        Command::Memory(args) => memory_cmd::run(&args, &ctx),
        Command::Approval(cmd) => approval_cmd::run(cmd, &ctx),
        Command::Route(args) => route_cmd::run(&args, &ctx),
        Command::Doctor(args) => doctor_cmd::run(&args, &ctx),
        Command::Mcp(args) => mcp::run(&args, ctx),
        Command::Completions { shell } => shell_cmd::completions(shell, &mut command(), &ctx),
        Command::Man(args) => shell_cmd::man(&args, &command(), &ctx),
    };
    // A tail still buffered when the command ends is written now, so that a failure to write it
    // is reported rather than lost at exit.
    match result.and_then(|code| ctx::flush_stdout().map(|()| code)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => e.report(),
    }
}

#[cfg(test)]
mod tests {
    use clap::FromArgMatches;
    use proptest::prelude::*;

    use super::*;

    /// `squad` with `args`, as the process gets them.
    fn argv(args: &[&str]) -> Vec<std::ffi::OsString> {
        std::iter::once("squad")
            .chain(args.iter().copied())
            .map(Into::into)
            .collect()
    }

    /// When [`parse_one`] parses `args`, the whole command parses them to the same.
    fn agrees(args: &[&str]) {
        let args = argv(args);
        let Some(one) = parse_one(&args) else {
            return;
        };
        let matches = Cli::command()
            .try_get_matches_from(&args)
            .unwrap_or_else(|e| {
                panic!("{args:?}: parse_one parsed what the whole command refuses: {e}")
            });
        let whole = Cli::from_arg_matches(&matches).unwrap();
        assert_eq!(format!("{one:?}"), format!("{whole:?}"), "{args:?}");
    }

    /// Each command `parse_one` takes, in an ordinary command line, with the options of `squad`
    /// before and after it: parsed alone, and to what the whole command gives.
    #[test]
    fn parse_one_parses_each_of_its_commands() {
        for line in [
            &["notes", "list", "--agent", "data"][..],
            &["--json", "notes", "show", "--agent", "data", "HEAD"],
            &[
                "-C",
                "repo",
                "--state-dir",
                "st",
                "memory",
                "spawn",
                "--agent",
                "a",
                "--json",
            ],
            &[
                "memory",
                "spawn",
                "--agent",
                "a",
                "--situation",
                "post-incident",
                "--task",
                "x",
            ],
            &["-vv", "schema", "note-entry"],
            &["route", "generate", "--events", "3"],
            &["doctor", "--fix"],
            &["mcp", "--read-only"],
        ] {
            assert!(parse_one(&argv(line)).is_some(), "{line:?}");
            agrees(line);
        }
        // Left to the whole command: help, the version, errors, the other commands, and a
        // command's name as an option's value.
        for line in [
            &["notes", "--help"][..],
            &["--version"],
            &["memory", "spawn"],
            &["approval", "status"],
            &["-C", "notes", "approval", "status"],
            &["help", "notes"],
            &["notes", "lsit"],
        ] {
            assert!(parse_one(&argv(line)).is_none(), "{line:?}");
        }
    }

    /// Options of `squad`, each as the tokens that give it.
    const GLOBALS: [&[&str]; 9] = [
        &["-C", "dir"],
        &["-Cdir"],
        &["--state-dir", "st"],
        &["--state-dir=st"],
        &["--json"],
        &["-v"],
        &["-vv"],
        &["--verbose"],
        &["-C", "memory"],
    ];

    /// Command lines of the commands, most of them valid.
    const COMMANDS: [&[&str]; 14] = [
        &["notes", "list", "--agent", "data"],
        &["notes", "show", "--agent", "data", "HEAD"],
        &["notes", "write", "--agent", "data", "--type", "decision"],
        &[
            "memory",
            "spawn",
            "--agent",
            "a",
            "--situation",
            "post-incident",
        ],
        &["memory", "spawn", "--agent", "a", "--task", "why"],
        &["memory", "search", "--agent", "a", "words"],
        &["schema", "note-entry"],
        &["schema", "nothing"],
        &["route", "generate", "--events", "3"],
        &["doctor"],
        &["doctor", "--fix"],
        &["mcp", "--read-only"],
        &["approval", "status"],
        &["completions", "bash"],
    ];

    /// Tokens that may follow: options of `squad` again, help, the version, stray words.
    const AFTER: [&str; 14] = [
        "--json",
        "-v",
        "-C",
        "dir",
        "--state-dir",
        "st",
        "--help",
        "-h",
        "--version",
        "help",
        "--",
        "memory",
        "--agent",
        "--unknown",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]
        /// Command lines built of `squad`'s options, a command and what may follow, with one
        /// token sometimes moved: whatever `parse_one` parses, the whole command parses to the
        /// same.
        #[test]
        fn parse_one_agrees_with_the_whole_command(
            before in proptest::collection::vec(proptest::sample::select(GLOBALS.to_vec()), 0..3),
            command in proptest::sample::select(COMMANDS.to_vec()),
            after in proptest::collection::vec(proptest::sample::select(AFTER.to_vec()), 0..3),
            shift in proptest::option::of((0usize..12, 0usize..12)),
        ) {
            let mut line: Vec<&str> = before.concat();
            line.extend_from_slice(command);
            line.extend(after);
            if let Some((from, to)) = shift
                && from < line.len()
            {
                let token = line.remove(from);
                line.insert(to.min(line.len()), token);
            }
            agrees(&line);
        }
    }
}
