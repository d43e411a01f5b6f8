//! `squad notes setup [--remote <name>]`: configure a clone so that plain `git fetch` / `git pull`
//! bring the squad notes into `refs/notes/remotes/<remote>/squad/*` and never fail on local notes.
//!
//! Wired as the `setup` subcommand of `squad notes` (see `notes_cmd.rs`).

use serde_json::json;
use squad_notes::transport::{GitCliTransport, SetupOptions};

use crate::ctx::{CmdResult, Ctx, errln, outln};

/// Arguments of `squad notes setup`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  squad notes setup --remote origin\n  squad notes setup --dry-run --json\n\nSets: remote.REMOTE.fetch +refs/notes/squad/*:refs/notes/remotes/REMOTE/squad/*\n(and the squad-state branch, unless your refspecs fetch it already),\nnotes.rewriteRef refs/notes/squad/*, notes.rewrite.amend and notes.rewrite.rebase\ntrue, notes.rewriteMode concatenate (so amend and rebase carry the notes).\nYour own refspecs are kept."
)]
pub(crate) struct SetupArgs {
    /// The remote whose fetch configuration to set up.
    #[arg(long, value_name = "name", default_value = "origin")]
    remote: String,
    /// Show what would change; change nothing.
    #[arg(long)]
    dry_run: bool,
}

/// Adds the squad's refspecs and rewrite settings once, keeping the user's own.
pub(crate) fn run(args: &SetupArgs, ctx: &Ctx) -> CmdResult {
    let transport = GitCliTransport::new(ctx.repo_root()?);
    let options = SetupOptions {
        dry_run: args.dry_run,
        ..SetupOptions::default()
    };
    let report = transport.setup_with(&args.remote, &options).map_err(|e| {
        let not_found = e.kind() == squad_notes::ErrorKind::NotFound;
        let err = crate::notes_cmd::lib_err(e);
        if not_found {
            err.with_hint("add the remote first: git remote add <name> <url>")
        } else {
            err
        }
    })?;
    let key = format!("remote.{}.fetch", args.remote);
    if ctx.json {
        ctx.print_json(&json!({
            "remote": args.remote,
            "added": report.added,
            "removed": report.removed,
            "kept": report.kept,
            "config": report.config.iter().map(|(k, old, new)| json!({"key": k, "old": old, "new": new})).collect::<Vec<_>>(),
            "warnings": report.warnings,
            "dry_run": report.dry_run,
        }))?;
    } else {
        let verb = if report.dry_run { "would add" } else { "added" };
        let set = if report.dry_run { "would set" } else { "set" };
        for spec in &report.added {
            outln!(ctx, "{verb} {key} {spec}")?;
        }
        for (k, old, new) in &report.config {
            match old {
                Some(old) => outln!(ctx, "{set} {k} {new} (was {old})")?,
                None => outln!(ctx, "{set} {k} {new}")?,
            }
        }
        for spec in &report.kept {
            outln!(ctx, "kept {key} {spec} (yours)")?;
        }
        if report.is_unchanged() {
            outln!(
                ctx,
                "{key} and the notes rewrite settings are already set up"
            )?;
        }
        for w in &report.warnings {
            errln!("warning: {w}");
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    fn ctx(dir: &Path, json: bool) -> Ctx {
        Ctx::new(Some(dir.to_path_buf()), None, json).unwrap()
    }

    fn args(remote: &str) -> SetupArgs {
        SetupArgs {
            remote: remote.to_owned(),
            dry_run: false,
        }
    }

    #[test]
    fn setup_adds_the_refspec_once_and_refuses_bad_remotes() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        git(repo, &["init", "-q"]);
        git(repo, &["remote", "add", "origin", "/nowhere/remote.git"]);
        std::fs::create_dir(repo.join("sub")).unwrap();
        // From a subdirectory, twice: the refspec lands once.
        assert_eq!(
            run(&args("origin"), &ctx(&repo.join("sub"), false)).unwrap(),
            0
        );
        assert_eq!(run(&args("origin"), &ctx(repo, true)).unwrap(), 0);
        assert_eq!(
            git(repo, &["config", "--get-all", "remote.origin.fetch"]),
            "+refs/heads/*:refs/remotes/origin/*\n\
             +refs/notes/squad/*:refs/notes/remotes/origin/squad/*\n"
        );
        let before = std::fs::read(repo.join(".git/config")).unwrap();
        // Bad input is exit 2 (the code is private to ctx; its Debug form shows it).
        for remote in ["nosuch", "--upload-pack=x", "a b", ""] {
            let err = run(&args(remote), &ctx(repo, false)).unwrap_err();
            let debug = format!("{err:?}");
            assert!(debug.contains("code: 2"), "remote {remote:?}: {debug}");
        }
        assert_eq!(std::fs::read(repo.join(".git/config")).unwrap(), before);
    }
}
