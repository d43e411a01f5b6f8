//! `squad notes sync [--remote <name>]`: fetch the squad notes of a remote, merge them entry by
//! entry into the local refs, and push the result with a lease, retrying lost races.
//!
//! Wired as the `sync` subcommand of `squad notes` (see `notes_cmd.rs`).

use serde_json::json;
use squad_notes::GixNotes;
use squad_notes::transport::GitCliTransport;

use crate::ctx::{CliError, CmdResult, Ctx, outln};

/// Arguments of `squad notes sync`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  squad notes sync --remote origin\n  squad notes sync --json   # {\"fetched\":1,\"merged\":1,\"pushed\":2,...}"
)]
pub(crate) struct SyncArgs {
    /// The remote to sync with.
    #[arg(long, value_name = "name", default_value = "origin")]
    remote: String,
}

/// Runs one sync of every `refs/notes/squad/*` ref with the remote.
pub(crate) fn run(args: &SyncArgs, ctx: &Ctx) -> CmdResult {
    let root = ctx.repo_root()?;
    let backend = GixNotes::discover(&root).map_err(|e| {
        CliError::usage(e.to_string()).with_hint("run inside a git repository or pass -C <path>")
    })?;
    let transport = GitCliTransport::new(root);
    let report = squad_notes::sync::sync(&backend, &transport, &args.remote).map_err(|e| {
        if e.is_user_error() {
            let err = CliError::usage(e.to_string());
            if e.kind() == squad_notes::ErrorKind::NotFound {
                err.with_hint("see `git remote -v`; add it with: git remote add <name> <url>")
            } else {
                err
            }
        } else if e.kind() == squad_notes::ErrorKind::Conflict {
            CliError::failure(e.to_string())
                .with_hint("other clones kept pushing; nothing was lost, run the sync again")
        } else {
            CliError::failure(format!("{e:#}"))
        }
    })?;
    if ctx.json {
        ctx.print_json(&json!({
            "remote": args.remote,
            "fetched": report.fetched,
            "merged": report.merged,
            "pushed": report.pushed,
            "refs": report.refs,
            "rounds": report.rounds,
        }))?;
    } else {
        outln!(
            ctx,
            "{}: fetched {}, merged {}, pushed {} ({} notes refs, {} round{})",
            args.remote,
            report.fetched,
            report.merged,
            report.pushed,
            report.refs,
            report.rounds,
            if report.rounds == 1 { "" } else { "s" }
        )?;
    }
    Ok(0)
}
