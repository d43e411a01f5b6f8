//! `squad notes setup [--remote <name>]`: configure a clone so that plain `git fetch` / `git pull`
//! bring the squad notes into `refs/notes/remotes/<remote>/squad/*` and never fail on local notes.
//!
//! Wired as the `setup` subcommand of `squad notes` (see `notes_cmd.rs`).

use serde_json::json;
use squad_notes::transport::GitCliTransport;

use crate::ctx::{CliError, CmdResult, Ctx, outln};

/// Arguments of `squad notes setup`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  squad notes setup --remote origin")]
pub(crate) struct SetupArgs {
    /// The remote whose fetch configuration to set up.
    #[arg(long, value_name = "name", default_value = "origin")]
    remote: String,
}

/// Adds the notes fetch refspec once, and removes refspecs that fetch into local notes refs.
pub(crate) fn run(args: &SetupArgs, ctx: &Ctx) -> CmdResult {
    let transport = GitCliTransport::new(ctx.repo_root()?);
    let report = transport.setup(&args.remote).map_err(|e| {
        let err = if e.is_user_error() {
            CliError::usage(e.to_string())
        } else {
            CliError::failure(format!("{e:#}"))
        };
        if e.kind() == squad_notes::ErrorKind::NotFound {
            err.with_hint("add the remote first: git remote add <name> <url>")
        } else {
            err
        }
    })?;
    if ctx.json {
        ctx.print_json(&json!({
            "remote": args.remote,
            "added": report.added,
            "removed": report.removed,
        }))?;
    } else {
        let key = format!("remote.{}.fetch", args.remote);
        for spec in &report.removed {
            outln!(
                ctx,
                "removed {key} {spec} (it fetched into local notes refs)"
            )?;
        }
        for spec in &report.added {
            outln!(ctx, "added {key} {spec}")?;
        }
        if report.added.is_empty() && report.removed.is_empty() {
            outln!(ctx, "{key} is already set up")?;
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
