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
/// at 29 MB).
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

    #[command(subcommand)]
    command: Command,
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
fn parse() -> Result<Cli, clap::Error> {
    use clap::FromArgMatches;
    match Cli::command().try_get_matches() {
        Ok(matches) => {
            if let Ok(cli) = Cli::from_arg_matches(&matches) {
                return Ok(cli);
            }
        }
        // The version names no argument.
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayVersion => return Err(e),
        Err(_) => {}
    }
    let matches = command().try_get_matches()?;
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command()))
}

fn main() -> ExitCode {
    let cli = match parse() {
        Ok(cli) => cli,
        // The version is printed as it is: no need for the restyled command.
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayVersion => {
            return ctx::report_usage_error(&e, &Cli::command());
        }
        Err(e) => return ctx::report_usage_error(&e, &command()),
    };
    // No transparent huge pages: mimalloc asks for them (`madvise`) on its arenas, so where
    // the system grants them every touched 2 MiB of heap is resident and zeroed whole; a
    // `notes list` of 100k notes peaked at 135 MiB with them and 100 MiB without, no slower.
    // Best effort: a kernel without the flag keeps its default. Turned off once the command
    // line is parsed (the heap is still small then), except for `memory spawn`: a read of a
    // few megabytes that ends at once, whose heap would be touched in some 500 pages of
    // 4 KiB (most of its run time went to those page faults); with huge pages it takes a few
    // faults, for some 8 MiB more resident memory while it runs (whole-process spawn on a
    // 1.4 MB squad: p50 5.7 -> 4.9 ms, 926 -> 405 page faults).
    #[cfg(target_os = "linux")]
    if !matches!(&cli.command, Command::Memory(a) if memory_cmd::is_spawn(a)) {
        let _ = nix::sys::prctl::set_thp_disable(true);
    }
    logging::init(cli.verbose);
    let ctx = match Ctx::new(cli.dir, cli.state_dir, cli.json) {
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
