//! `squad notes promote` and `squad notes archive`: Ralph's promotion of flagged note entries to
//! `decisions.md` and `research/` on the `squad-state` branch, exactly once.
//!
//! Wired as subcommands of `squad notes` (see `notes_cmd.rs`).

use serde_json::{Value, json};
use squad_notes::promote::{
    ArchiveOptions, ArchiveReport, FoundEntry, Progress, PromoteOptions, PromoteReport, Promoter,
    Stage, Unparseable,
};
use squad_notes::state::OrphanBranchStore;

use crate::ctx::{CliError, CmdResult, Ctx, errln, outln};

/// Arguments of `squad notes promote`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  squad notes promote --json\n  squad notes promote --branch main --merged-from feature/login   # a squash-merged PR\n  squad notes promote --require-signed --json"
)]
pub(crate) struct PromoteArgs {
    /// The branch whose history is promoted (default: git config squad.defaultBranch, else the
    /// remote's HEAD; never the local HEAD).
    #[arg(long, value_name = "name")]
    branch: Option<String>,
    /// A squash- or rebase-merged PR's tip: promote the notes on BRANCH..REV.
    #[arg(long, value_name = "rev")]
    merged_from: Option<String>,
    /// Show what would be promoted; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Promote only entries whose SSH signature verifies (`squad notes verify`); list the others
    /// as refused.
    #[arg(long)]
    require_signed: bool,
    /// Do not fetch the remote's squad-state first (by default the promotion ledger of the
    /// remote is merged in before promoting, so that nothing is promoted twice across clones).
    #[arg(long)]
    offline: bool,
    /// The remote whose squad-state is fetched first (default: origin, skipped when there is
    /// no such remote).
    #[arg(long, value_name = "name")]
    remote: Option<String>,
}

/// Arguments of `squad notes archive`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  squad notes archive --closed origin/spike-oauth --json")]
pub(crate) struct ArchiveArgs {
    /// The tip of the closed, unmerged branch.
    #[arg(long, value_name = "rev")]
    closed: String,
    /// The branch it was proposed against (default: the default branch).
    #[arg(long, value_name = "name")]
    branch: Option<String>,
    /// Show what would be archived; write nothing.
    #[arg(long)]
    dry_run: bool,
}

fn lib_err(e: squad_notes::Error) -> CliError {
    let no_branch = e.kind() == squad_notes::ErrorKind::NotFound && e.op() == "promote.branch";
    let err = crate::notes_cmd::lib_err(e);
    if no_branch {
        err.with_hint(
            "git config squad.defaultBranch main   (or: git remote set-head origin --auto)",
        )
    } else {
        err
    }
}

type Opened = (Promoter<OrphanBranchStore>, Option<indicatif::ProgressBar>);

/// The promoter, and the progress spinner it drives (when stderr is a terminal). The spinner
/// shows each stage's count, which only grows.
fn open(ctx: &Ctx) -> Result<Opened, CliError> {
    let not_repo = crate::notes_cmd::not_repo;
    let root = ctx.repo_root()?;
    let state = OrphanBranchStore::open(&root).map_err(not_repo)?;
    let promoter = Promoter::open(&ctx.dir, state).map_err(not_repo)?;
    let Some(bar) = crate::ctx::progress_bar() else {
        return Ok((promoter, None));
    };
    let shown = bar.clone();
    let walked = std::sync::atomic::AtomicU64::new(0);
    let read = std::sync::atomic::AtomicU64::new(0);
    let total = std::sync::atomic::AtomicU64::new(0);
    Ok((
        promoter.with_progress(move |p: Progress| {
            use std::sync::atomic::Ordering::Relaxed;
            match p.stage {
                Stage::ReadNotes => {
                    read.fetch_max(p.done, Relaxed);
                    total.fetch_max(p.total.unwrap_or(0), Relaxed);
                }
                _ => {
                    walked.fetch_max(p.done, Relaxed);
                }
            }
            let (w, r, t) = (
                walked.load(Relaxed),
                read.load(Relaxed),
                total.load(Relaxed),
            );
            bar.set_message(if t > 0 {
                format!(
                    "walked {}, read {r}/{t} notes",
                    crate::ctx::count(w, "commit")
                )
            } else {
                format!("walked {}", crate::ctx::count(w, "commit"))
            });
            bar.tick();
        }),
        Some(shown),
    ))
}

/// Fetches the remote's squad-state and merges it into the local branch (the ledger of what
/// other clones promoted), unless `--offline` or `--dry-run` (which writes nothing). Without
/// `--remote`, a clone with no `origin` skips it; a remote given that does not exist is an error.
fn pull_state(args: &PromoteArgs, ctx: &Ctx, state: &OrphanBranchStore) -> Result<(), CliError> {
    if args.offline || args.dry_run {
        return Ok(());
    }
    let remote = args.remote.as_deref().unwrap_or("origin");
    let transport = squad_notes::transport::GitCliTransport::new(ctx.repo_root()?);
    match squad_notes::sync::pull_state(state, &transport, remote) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == squad_notes::ErrorKind::NotFound && args.remote.is_none() => Ok(()),
        Err(e) => Err(crate::notes_sync_cmd::sync_err(e).with_hint(
            "promotion first merges the remote's squad-state; pass --offline to skip it",
        )),
    }
}

/// The status of the signature of a flagged entry: `None` when it is `signed-verified`.
fn signature_check(
    ctx: &Ctx,
    notes: &squad_notes::GixNotes,
) -> Result<impl Fn(&FoundEntry) -> Option<String>, CliError> {
    use squad_notes::NotesBackendExt;
    use squad_notes::sign::{AllowedSigners, SignatureStatus, verify_entry};
    let allowed =
        AllowedSigners::from_git_config(&ctx.repo_root()?).map_err(crate::notes_cmd::lib_err)?;
    let notes = notes.clone();
    Ok(move |f: &FoundEntry| {
        let raw = notes
            .read_current(&f.notes_ref, &f.commit)
            .ok()
            .flatten()
            .unwrap_or_default();
        let parsed = squad_notes::format::parse_note_sourced(&raw);
        let text = parsed
            .entries
            .iter()
            .find(|e| e.entry.id == f.entry.id)
            .map(|e| e.text(&raw))
            .unwrap_or_default();
        let ns = f
            .notes_ref
            .as_str()
            .strip_prefix(squad_notes::sync::SQUAD_PREFIX)
            .unwrap_or_default();
        let principal = crate::notes_cmd::signer(ns, f.entry.agent.as_str());
        let status = verify_entry(text, principal, allowed.as_ref()).status;
        (status != SignatureStatus::Verified).then(|| status.as_str().to_owned())
    })
}

fn found_json(f: &FoundEntry) -> Value {
    json!({
        "id": f.entry.id.to_string(),
        "namespace": f.notes_ref.as_str(),
        "commit": f.commit.as_str(),
    })
}

fn unparseable_json(u: &Unparseable) -> Value {
    json!({
        "namespace": u.notes_ref.as_str(),
        "commit": u.commit.as_str(),
        "line": u.line.line,
        "error": u.line.error,
    })
}

fn warn_unparseable(list: &[Unparseable]) {
    for u in list {
        errln!(
            "warning: {} {} line {}: {} (skipped, left in the note)",
            u.notes_ref,
            u.commit,
            u.line.line,
            u.line.error
        );
    }
}

pub(crate) fn promote(args: &PromoteArgs, ctx: &Ctx) -> CmdResult {
    let (promoter, bar) = open(ctx)?;
    if let Err(e) = pull_state(args, ctx, promoter.state()) {
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        return Err(e);
    }
    let options = PromoteOptions {
        branch: args.branch.clone(),
        merged_from: args.merged_from.clone(),
        dry_run: args.dry_run,
    };
    let result = if args.require_signed {
        let notes = squad_notes::GixNotes::discover(&ctx.repo_root()?)
            .map_err(crate::notes_cmd::lib_err)?;
        let check = signature_check(ctx, &notes)?;
        promoter.promote_checked(&options, &check)
    } else {
        promoter.promote(&options)
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let report: PromoteReport = result.map_err(lib_err)?;
    warn_unparseable(&report.unparseable);
    if ctx.json {
        ctx.print_json(&json!({
            "promoted": report.promoted.iter().map(|f| f.entry.id.to_string()).collect::<Vec<_>>(),
            "refused": report.refused.iter().map(|(f, status)| json!({"id": f.entry.id.to_string(), "status": status})).collect::<Vec<_>>(),
            "skipped": report.skipped(),
            "unflagged": report.unflagged,
            "unparseable": report.unparseable.iter().map(unparseable_json).collect::<Vec<_>>(),
            "already_promoted": report.already_promoted,
            "entries": report.promoted.iter().map(found_json).collect::<Vec<_>>(),
            "branch": report.branch,
            "commits_scanned": report.commits_scanned,
            "incremental": report.incremental,
            "dry_run": report.dry_run,
        }))?;
    } else {
        let verb = if report.dry_run {
            "would promote"
        } else {
            "promoted"
        };
        for f in &report.promoted {
            outln!(
                ctx,
                "{verb} {} ({} on {})",
                f.entry.id,
                f.notes_ref,
                f.commit
            )?;
        }
        for (f, status) in &report.refused {
            outln!(
                ctx,
                "refused {} ({} on {}): {status}, not signed-verified",
                f.entry.id,
                f.notes_ref,
                f.commit
            )?;
        }
        outln!(
            ctx,
            "{verb} {}, skipped {} ({} unflagged, {} unparseable), already promoted {} ({} of {})",
            report.promoted.len(),
            report.skipped(),
            report.unflagged,
            report.unparseable.len(),
            report.already_promoted,
            crate::ctx::count(report.commits_scanned, "commit"),
            report.branch
        )?;
    }
    Ok(0)
}

pub(crate) fn archive(args: &ArchiveArgs, ctx: &Ctx) -> CmdResult {
    let (promoter, bar) = open(ctx)?;
    let result = promoter.archive(&ArchiveOptions {
        closed: args.closed.clone(),
        branch: args.branch.clone(),
        dry_run: args.dry_run,
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let report: ArchiveReport = result.map_err(lib_err)?;
    warn_unparseable(&report.unparseable);
    if ctx.json {
        ctx.print_json(&json!({
            "archived": report.archived.iter().map(|(f, _)| f.entry.id.to_string()).collect::<Vec<_>>(),
            "files": report.archived.iter().map(|(_, k)| k.as_str()).collect::<Vec<_>>(),
            "skipped": report.skipped(),
            "already_archived": report.already_archived,
            "commits_scanned": report.commits_scanned,
            "dry_run": report.dry_run,
        }))?;
    } else {
        let verb = if report.dry_run {
            "would archive"
        } else {
            "archived"
        };
        for (f, key) in &report.archived {
            outln!(ctx, "{verb} {} to {key}", f.entry.id)?;
        }
        outln!(
            ctx,
            "{verb} {}, skipped {}, already archived {} ({})",
            report.archived.len(),
            report.skipped(),
            report.already_archived,
            crate::ctx::count(report.commits_scanned, "commit")
        )?;
    }
    Ok(0)
}
