//! `squad notes sync [--remote <name>]`: fetch the squad notes of a remote, merge them entry by
//! entry into the local refs, and push the result with a lease, retrying lost races.
//!
//! Wired as the `sync` subcommand of `squad notes` (see `notes_cmd.rs`).

use serde_json::json;
use squad_notes::GixNotes;
use squad_notes::state::OrphanBranchStore;
use squad_notes::sync::{SyncOptions, SyncProgress, SyncStage};
use squad_notes::transport::GitCliTransport;

use crate::ctx::{CliError, CmdResult, Ctx, errln, outln};

/// Arguments of `squad notes sync`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  squad notes sync --remote origin\n  squad notes sync --json   # {\"fetched\":1,\"merged\":1,\"pushed\":2,...}\n\nAlso syncs the permanent state (refs/heads/squad-state: decisions.md, research/,\nthe promotion ledger), so that promotion is exactly once across clones."
)]
pub(crate) struct SyncArgs {
    /// The remote to sync with.
    #[arg(long, value_name = "name", default_value = "origin")]
    remote: String,
}

/// Maps a sync error: an unknown remote or a bad name is exit 2; anything git says about a
/// remote that exists (unreachable, refused) is exit 1 with git's reason.
pub(crate) fn sync_err(e: squad_notes::Error) -> CliError {
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
        crate::notes_cmd::lib_err(e)
    }
}

/// Runs one sync of every `refs/notes/squad/*` ref and of the state branch with the remote.
pub(crate) fn run(args: &SyncArgs, ctx: &Ctx) -> CmdResult {
    let root = ctx.repo_root()?;
    let not_repo = crate::notes_cmd::not_repo;
    let backend = GixNotes::discover(&root).map_err(not_repo)?;
    let state = OrphanBranchStore::open(&root).map_err(not_repo)?;
    let transport = GitCliTransport::new(root);
    let bar = crate::ctx::progress_bar();
    let shown = bar.clone();
    let progress = move |p: SyncProgress| {
        if let Some(bar) = &shown {
            let message = match (p.stage, p.total) {
                (SyncStage::Fetch, _) if p.done > 1 => format!("fetching (round {})", p.done),
                (SyncStage::Fetch, _) => "fetching".to_owned(),
                (SyncStage::Merge, Some(t)) => format!("merging {}/{t}", p.done),
                (SyncStage::Push, Some(t)) => format!("pushing {}", crate::ctx::count(t, "ref")),
                _ => "syncing".to_owned(),
            };
            bar.set_message(message);
            bar.tick();
        }
    };
    let result = squad_notes::sync::sync_all(
        &backend,
        Some(&state),
        &transport,
        &args.remote,
        &SyncOptions::default(),
        &progress,
    );
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let report = result.map_err(sync_err)?;
    for c in &report.conflicts {
        errln!(
            "warning: {} {}: entry {} differs between this clone and {}; both versions were kept",
            c.notes_ref,
            c.object,
            c.id,
            args.remote
        );
    }
    let state = report.state.clone().unwrap_or_default();
    if ctx.json {
        ctx.print_json(&json!({
            "remote": args.remote,
            "fetched": report.fetched,
            "merged": report.merged,
            "pushed": report.pushed,
            "refs": report.refs,
            "rounds": report.rounds,
            "conflicts": report.conflicts.iter().map(|c| json!({
                "namespace": c.notes_ref.as_str(),
                "object": c.object.as_str(),
                "id": c.id.to_string(),
            })).collect::<Vec<_>>(),
            "state": {
                "ref": state.ref_name,
                "fetched": state.fetched,
                "merged": state.merged,
                "pushed": state.pushed,
                "tip": state.tip,
            },
        }))?;
    } else {
        outln!(
            ctx,
            "{}: fetched {}, merged {}, pushed {} ({}, {}); squad-state: {}",
            args.remote,
            report.fetched,
            report.merged,
            report.pushed,
            crate::ctx::count(report.refs, "notes ref"),
            crate::ctx::count(report.rounds, "round"),
            match (state.fetched, state.merged, state.pushed) {
                (_, true, true) => "merged, pushed",
                (_, true, false) => "merged",
                (true, _, true) => "fetched, pushed",
                (true, _, false) => "fetched",
                (false, _, true) => "pushed",
                (false, _, false) => "up to date",
            }
        )?;
    }
    Ok(0)
}
