//! [`Transport`] over the `git` command line.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::{
    FetchRefspec, PushResult, PushStatus, PushUpdate, TrackingRef, Transport, check_ref_name,
    validate_remote_name,
};
use crate::health::LockState;
use crate::{Error, ErrorKind, Result};

/// How long a git command blocked by a lock file that a running process holds is retried.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// A [`Transport`] that runs the `git` binary (git 2.30 or newer) in a repository.
///
/// Authentication, proxies and ssh settings come from the repository's and the user's git
/// configuration, exactly as for a manual `git fetch`. Every command runs with
/// `GIT_TERMINAL_PROMPT=0` (a missing credential fails instead of hanging on a prompt) and with
/// stdin closed; nothing secret is ever put on a command line.
///
/// git fails at once when a lock file (`config.lock`, `<ref>.lock`, …) is in its way. A command
/// blocked by one that a running git holds is run again once it is gone; one that no running
/// process holds (a killed git left it) fails within a few seconds with
/// [`ErrorKind::Locked`] naming the file ([`Error::path`]), as the writers of this crate do
/// (see [`crate::health`]).
///
/// ```no_run
/// use squad_notes::transport::{FetchRefspec, GitCliTransport, PushUpdate, Transport};
/// # fn main() -> squad_notes::Result<()> {
/// let transport = GitCliTransport::new(".");
/// transport.setup("origin")?; // once per clone; idempotent
/// let seen = transport.fetch("origin", &[FetchRefspec::notes("origin")])?;
/// // ... merge refs/notes/remotes/origin/squad/data into refs/notes/squad/data ...
/// let expected = seen
///     .iter()
///     .find(|r| r.name == "refs/notes/remotes/origin/squad/data")
///     .map(|r| r.oid.clone());
/// let results = transport.push("origin", &[PushUpdate::same_name("refs/notes/squad/data", expected)])?;
/// assert!(results[0].status.is_accepted());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct GitCliTransport {
    repo: PathBuf,
    git: PathBuf,
    env: Vec<(OsString, OsString)>,
}

/// What [`GitCliTransport::setup_with`] changed (or, for a dry run, would change).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SetupReport {
    /// Fetch refspecs added to `remote.<name>.fetch`.
    pub added: Vec<String>,
    /// Always empty: setup never removes a refspec (kept for compatibility).
    pub removed: Vec<String>,
    /// The remote's existing fetch refspecs that also fetch notes refs (the user's own, such
    /// as the seed's `refs/notes/*:refs/notes/*`): left as they are, reported.
    pub kept: Vec<String>,
    /// Other settings changed: `(key, old value, new value)`.
    pub config: Vec<(String, Option<String>, String)>,
    /// Things worth knowing that setup did not change.
    pub warnings: Vec<String>,
    /// `true` for a dry run: nothing was written.
    pub dry_run: bool,
}

impl SetupReport {
    /// `true` when setup changed (or would change) nothing.
    pub fn is_unchanged(&self) -> bool {
        self.added.is_empty() && self.config.is_empty()
    }
}

/// What [`GitCliTransport::setup_with`] sets up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupOptions {
    /// Show the changes without making them.
    pub dry_run: bool,
    /// The state branch that plain `git fetch` should bring into
    /// `refs/remotes/<remote>/<branch>` (default `squad-state`); `None` leaves it out.
    pub state_branch: Option<String>,
    /// Configure git's notes rewrite support for the squad refs (default `true`).
    pub rewrite: bool,
}

impl Default for SetupOptions {
    fn default() -> Self {
        Self {
            dry_run: false,
            state_branch: Some("squad-state".to_owned()),
            rewrite: true,
        }
    }
}

/// The notes ref glob git's rewrite support is pointed at.
const REWRITE_REF: &str = "refs/notes/squad/*";

/// Replaces every credential in `text` (URL user information, queries and token-looking path
/// segments, secret `name=value` pairs, prefixed tokens, and the values of the secret
/// environment variables) by `***`: [`squad_model::redact::redact`], the workspace's one
/// redactor. Every message built from git's output goes through it.
///
/// ```
/// use squad_notes::transport::redact_urls;
/// assert_eq!(
///     redact_urls("fatal: unable to access 'https://me:s3cret@example.invalid/r.git/'"),
///     "fatal: unable to access 'https://***@example.invalid/r.git/'"
/// );
/// assert_eq!(
///     redact_urls("fatal: 'https://example.invalid/r.git?access_token=abc' not found"),
///     "fatal: 'https://example.invalid/r.git?***' not found"
/// );
/// assert_eq!(redact_urls("no url here"), "no url here");
/// ```
pub fn redact_urls(text: &str) -> String {
    squad_model::redact::redact(text).into_owned()
}

impl GitCliTransport {
    /// A transport working in the repository (or work tree) at `repo`, using `git` from `PATH`.
    pub fn new(repo: impl Into<PathBuf>) -> Self {
        Self {
            repo: repo.into(),
            git: PathBuf::from("git"),
            env: Vec::new(),
        }
    }

    /// Sets an environment variable for every git command (for example `GIT_SSH_COMMAND`, or
    /// `GIT_CONFIG_GLOBAL` to isolate tests). `GIT_TERMINAL_PROMPT` is always `0`.
    pub fn with_env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Uses the git binary at `git` instead of the one on `PATH`.
    pub fn with_git_binary(mut self, git: impl Into<PathBuf>) -> Self {
        self.git = git.into();
        self
    }

    /// The repository directory.
    pub fn repo(&self) -> &Path {
        &self.repo
    }

    /// [`GitCliTransport::setup_with`] with the default options.
    ///
    /// # Errors
    ///
    /// As [`GitCliTransport::setup_with`].
    pub fn setup(&self, remote: &str) -> Result<SetupReport> {
        self.setup_with(remote, &SetupOptions::default())
    }

    /// Configures a clone so that plain `git fetch` and `git pull` bring the squad notes into
    /// `refs/notes/remotes/<remote>/squad/*` (and the state branch into
    /// `refs/remotes/<remote>/<branch>`) and never fail on, or overwrite, local notes; and so
    /// that `git commit --amend` and `git rebase` carry the squad notes to the new commits.
    ///
    /// # Behavior
    ///
    /// - Adds `+refs/notes/squad/*:refs/notes/remotes/<remote>/squad/*` to
    ///   `remote.<remote>.fetch` unless it is there already.
    /// - Adds `+refs/heads/<branch>*:refs/remotes/<remote>/<branch>*` for the state branch
    ///   unless an existing refspec already fetches it (the usual
    ///   `+refs/heads/*:refs/remotes/<remote>/*` does). A glob, so that `git fetch` still
    ///   succeeds while the remote has no such branch.
    /// - With `rewrite`: adds `refs/notes/squad/*` to `notes.rewriteRef` (unless a value covers
    ///   it), sets `notes.rewrite.amend` and `notes.rewrite.rebase` to `true` unless they are,
    ///   and sets `notes.rewriteMode` to `concatenate` (every line of both notes is kept when
    ///   commits are squashed) unless it is `concatenate` or `cat_sort_uniq` already.
    /// - **Keeps the user's refspecs.** Nothing is removed. A refspec of the remote that fetches
    ///   straight into local notes refs (such as the seed's `refs/notes/*:refs/notes/*`) is
    ///   reported in [`SetupReport::kept`], with a warning: for the squad refs it makes plain
    ///   `git fetch` fail once local notes diverge (or, with `+`, overwrite them);
    ///   `squad notes sync` is the way to merge them.
    /// - Idempotent: a second run changes and reports nothing. `dry_run` reports the changes
    ///   and writes nothing. Nothing is fetched.
    ///
    /// # Errors
    ///
    /// An unknown remote is [`ErrorKind::NotFound`]; an invalid name is
    /// [`ErrorKind::InvalidInput`] (nothing changed in either case).
    pub fn setup_with(&self, remote: &str, options: &SetupOptions) -> Result<SetupReport> {
        validate_remote_name(remote)?;
        self.require_remote(remote, "transport.setup")?;
        let key = format!("remote.{remote}.fetch");
        let existing = self.config_get_all(&key)?;
        let mut report = SetupReport {
            dry_run: options.dry_run,
            ..SetupReport::default()
        };
        let mut add: Vec<(String, String)> = Vec::new();
        let wanted = FetchRefspec::notes(remote).to_string();
        if !existing.contains(&wanted) {
            add.push((key.clone(), wanted));
        }
        if let Some(branch) = &options.state_branch {
            let src = format!("refs/heads/{branch}");
            let dst = format!("refs/remotes/{remote}/{branch}");
            if !existing.iter().any(|spec| refspec_maps(spec, &src, &dst)) {
                let glob = format!("+{src}*:{dst}*");
                if !existing.contains(&glob) {
                    add.push((key.clone(), glob));
                }
            }
        }
        for spec in &existing {
            if fetches_into_local_notes(spec) {
                report.kept.push(spec.clone());
                report.warnings.push(format!(
                    "{key} {spec} is yours and was kept; it also fetches refs/notes/squad/* \
                     straight into your local notes refs, so a plain `git fetch` fails once they \
                     differ from the remote's (or, with '+', overwrites them): use \
                     `squad notes sync` to merge squad notes"
                ));
            }
        }
        let mut set: Vec<(String, Option<String>, String)> = Vec::new();
        if options.rewrite {
            let refs = self.config_get_all("notes.rewriteRef")?;
            let covered = refs.iter().any(|r| {
                r == REWRITE_REF
                    || r.strip_suffix('*')
                        .is_some_and(|p| "refs/notes/squad/x".starts_with(p))
            });
            if !covered {
                add.push(("notes.rewriteRef".to_owned(), REWRITE_REF.to_owned()));
            }
            for flag in ["notes.rewrite.amend", "notes.rewrite.rebase"] {
                let old = self.config_get_all(flag)?.pop();
                if old.as_deref().map(str::to_ascii_lowercase).as_deref() != Some("true") {
                    set.push((flag.to_owned(), old, "true".to_owned()));
                }
            }
            let mode = self.config_get_all("notes.rewriteMode")?.pop();
            match mode.as_deref() {
                Some("concatenate" | "cat_sort_uniq") => {}
                _ => set.push((
                    "notes.rewriteMode".to_owned(),
                    mode,
                    "concatenate".to_owned(),
                )),
            }
            if std::env::var_os("GIT_NOTES_REWRITE_REF").is_some() {
                report.warnings.push(
                    "GIT_NOTES_REWRITE_REF is set in the environment and overrides \
                     notes.rewriteRef for git commands run with it"
                        .to_owned(),
                );
            }
        }
        for (k, v) in &add {
            if !options.dry_run {
                self.git_ok(
                    "transport.setup",
                    ["config", "--add", k.as_str(), v.as_str()],
                )?;
            }
            if k == &key {
                report.added.push(v.clone());
            } else {
                report.config.push((k.clone(), None, v.clone()));
            }
        }
        for (k, old, new) in set {
            if !options.dry_run {
                self.git_ok("transport.setup", ["config", k.as_str(), new.as_str()])?;
            }
            report.config.push((k, old, new));
        }
        Ok(report)
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.git);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)))
            .arg("-C")
            .arg(&self.repo)
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(Stdio::null());
        cmd
    }

    fn run<I, S>(&self, op: &'static str, args: I) -> Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            let out = self.command().args(&args).output().map_err(|e| {
                Error::new(
                    ErrorKind::Backend,
                    op,
                    format!("cannot run {}", self.git.display()),
                )
                .with_source(e)
            })?;
            if out.status.success() {
                return Ok(out);
            }
            // git fails at once when a lock file is in its way. One a running git holds goes
            // away in a moment: wait, then run the command again. One that no process holds (a
            // killed git left it) never will: say so, naming it, as squad's own writers do.
            let stderr = String::from_utf8_lossy(&out.stderr);
            let Some(lock) = crate::health::lock_in_git_message(&stderr, &self.repo) else {
                return Ok(out);
            };
            loop {
                match crate::health::lock_state(&lock) {
                    LockState::Gone => break,
                    LockState::Stale(stale) => {
                        let path = lock.to_string_lossy();
                        let what = path.strip_suffix(".lock").unwrap_or(&path);
                        return Err(crate::health::locked_error(op, what, &stale));
                    }
                    LockState::Held if Instant::now() >= deadline => return Ok(out),
                    LockState::Held => std::thread::sleep(Duration::from_millis(50)),
                }
            }
        }
    }

    /// Runs git and requires success; returns stdout.
    fn git_ok<I, S>(&self, op: &'static str, args: I) -> Result<String>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let out = self.run(op, args)?;
        if !out.status.success() {
            return Err(git_failure(op, &out));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn config_get_all(&self, key: &str) -> Result<Vec<String>> {
        let out = self.run("transport.config", ["config", "--get-all", key])?;
        // Exit status 1 means "no such key".
        match out.status.code() {
            Some(0) => Ok(String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_owned)
                .collect()),
            Some(1) => Ok(Vec::new()),
            _ => Err(git_failure("transport.config", &out)),
        }
    }

    fn require_remote(&self, remote: &str, op: &'static str) -> Result<()> {
        if self
            .config_get_all(&format!("remote.{remote}.url"))?
            .is_empty()
        {
            return Err(Error::new(
                ErrorKind::NotFound,
                op,
                format!("no remote named {remote:?} (see `git remote -v`)"),
            ));
        }
        Ok(())
    }

    fn for_each_ref(&self, pattern: &str) -> Result<Vec<TrackingRef>> {
        let out = self.git_ok(
            "transport.fetch",
            ["for-each-ref", "--format=%(objectname) %(refname)", pattern],
        )?;
        Ok(out
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(oid, name)| TrackingRef {
                name: name.to_owned(),
                oid: oid.to_owned(),
            })
            .collect())
    }
}

/// `true` when the fetch refspec `spec` fetches the remote ref `src` into `dst`.
fn refspec_maps(spec: &str, src: &str, dst: &str) -> bool {
    let spec = spec.strip_prefix('+').unwrap_or(spec);
    let Some((from, to)) = spec.split_once(':') else {
        return false;
    };
    match (from.split_once('*'), to.split_once('*')) {
        (Some((fp, fs)), Some((tp, ts))) => src
            .strip_prefix(fp)
            .and_then(|m| m.strip_suffix(fs))
            .is_some_and(|m| format!("{tp}{m}{ts}") == dst),
        (None, None) => from == src && to == dst,
        _ => false,
    }
}

/// `true` for a fetch refspec that writes into local notes refs (not tracking refs).
fn fetches_into_local_notes(spec: &str) -> bool {
    let spec = spec.strip_prefix('+').unwrap_or(spec);
    if spec.starts_with('^') {
        return false;
    }
    match spec.split_once(':') {
        Some((_, dst)) => dst.starts_with("refs/notes/") && !dst.starts_with("refs/notes/remotes/"),
        None => false,
    }
}

/// An error carrying git's own message (first lines of stderr), never its command line.
fn git_failure(op: &'static str, out: &Output) -> Error {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let message: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(3)
        .collect();
    // The remote exists (every caller checked its name first): whatever git says now (an
    // unreachable URL, a refused connection, a path that is no repository) is a failure to
    // report with git's reason, not bad usage. Credentials in URLs never reach the message.
    Error::new(
        ErrorKind::Backend,
        op,
        redact_urls(&format!(
            "git failed ({}): {}",
            out.status,
            if message.is_empty() {
                "no message".to_owned()
            } else {
                message.join(" / ")
            }
        )),
    )
}

impl Transport for GitCliTransport {
    fn fetch(&self, remote: &str, refspecs: &[FetchRefspec]) -> Result<Vec<TrackingRef>> {
        validate_remote_name(remote)?;
        for spec in refspecs {
            spec.validate(remote)?;
        }
        if refspecs.is_empty() {
            return Ok(Vec::new());
        }
        self.require_remote(remote, "transport.fetch")?;
        let mut args: Vec<String> = [
            "fetch",
            "--quiet",
            "--no-tags",
            "--prune",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            "--",
            remote,
        ]
        .map(str::to_owned)
        .into();
        args.extend(refspecs.iter().map(ToString::to_string));
        tracing::debug!(remote, refspecs = refspecs.len(), "git fetch");
        self.git_ok("transport.fetch", &args)?;
        let mut out = Vec::new();
        for spec in refspecs {
            let pattern = spec.dst().strip_suffix('*').unwrap_or(spec.dst());
            // for-each-ref matches whole path components: list the directory of a partial glob.
            let listed = match pattern.rfind('/') {
                Some(i) if !pattern.ends_with('/') => &pattern[..=i],
                _ => pattern,
            };
            for r in self.for_each_ref(listed)? {
                let matches = if spec.dst().ends_with('*') {
                    r.name.starts_with(pattern)
                } else {
                    r.name == spec.dst()
                };
                if matches && !out.contains(&r) {
                    out.push(r);
                }
            }
        }
        out.sort();
        Ok(out)
    }

    fn push(&self, remote: &str, updates: &[PushUpdate]) -> Result<Vec<PushResult>> {
        validate_remote_name(remote)?;
        for u in updates {
            for name in [&u.local, &u.remote] {
                check_ref_name(name).map_err(|why| {
                    Error::new(
                        ErrorKind::InvalidInput,
                        "transport.push",
                        format!("cannot push: {why}"),
                    )
                })?;
            }
            let is_oid = |o: &str| {
                (o.len() == 40 || o.len() == 64) && o.bytes().all(|b| b.is_ascii_hexdigit())
            };
            if u.expected.as_deref().is_some_and(|o| !is_oid(o)) {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    "transport.push",
                    format!(
                        "cannot push {}: the expected value {:?} is not a full hex object id",
                        u.remote,
                        u.expected.as_deref().unwrap_or_default()
                    ),
                ));
            }
        }
        if updates.is_empty() {
            return Ok(Vec::new());
        }
        self.require_remote(remote, "transport.push")?;
        for u in updates {
            let out = self.run(
                "transport.push",
                [
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    "--end-of-options",
                    &u.local,
                ],
            )?;
            if !out.status.success() {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    "transport.push",
                    format!("cannot push {}: the local ref does not exist", u.local),
                ));
            }
        }
        let mut args: Vec<String> = vec!["push".into(), "--porcelain".into()];
        for u in updates {
            args.push(format!(
                "--force-with-lease={}:{}",
                u.remote,
                u.expected.as_deref().unwrap_or_default()
            ));
        }
        args.push("--".into());
        args.push(remote.into());
        for u in updates {
            args.push(format!("{}:{}", u.local, u.remote));
        }
        tracing::debug!(remote, refs = updates.len(), "git push with a lease");
        let out = self.run("transport.push", &args)?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let parsed = parse_porcelain(&stdout);
        let mut results = Vec::with_capacity(updates.len());
        for u in updates {
            match parsed.iter().find(|(dst, _)| *dst == u.remote) {
                Some((_, status)) => results.push(PushResult {
                    remote: u.remote.clone(),
                    status: status.clone(),
                }),
                None => return Err(git_failure("transport.push", &out)),
            }
        }
        // A remote on this machine refused because a lock file a killed git left blocks the
        // ref: no retry will help; name the file, as for a local lock.
        if results
            .iter()
            .any(|r| matches!(r.status, PushStatus::Rejected { .. }))
        {
            let stderr = String::from_utf8_lossy(&out.stderr);
            if let Some(lock) = crate::health::remote_lock_in_git_message(&stderr)
                && let LockState::Stale(stale) = crate::health::lock_state(&lock)
            {
                let path = lock.to_string_lossy();
                let what = path.strip_suffix(".lock").unwrap_or(&path);
                return Err(crate::health::locked_error("transport.push", what, &stale));
            }
        }
        Ok(results)
    }
}

/// Parses the ref lines of `git push --porcelain`: `<flag>\t<src>:<dst>\t<summary>`.
fn parse_porcelain(stdout: &str) -> Vec<(String, PushStatus)> {
    let mut out = Vec::new();
    for line in stdout.lines() {
        let mut parts = line.splitn(3, '\t');
        let (Some(flag), Some(refs), Some(summary)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let Some((_, dst)) = refs.split_once(':') else {
            continue;
        };
        let reason = summary
            .find('(')
            .and_then(|i| summary[i + 1..].strip_suffix(')'))
            .unwrap_or(summary)
            .to_owned();
        let status = match flag {
            "*" => PushStatus::Created,
            " " => PushStatus::FastForward,
            "+" => PushStatus::Forced,
            "=" => PushStatus::UpToDate,
            "!" if summary.starts_with("[rejected]") && reason == "stale info" => {
                PushStatus::StaleLease
            }
            _ => PushStatus::Rejected { reason },
        };
        out.push((dst.to_owned(), status));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_lines_map_to_statuses() {
        let out = "To /tmp/remote.git\n\
                   *\trefs/notes/squad/a:refs/notes/squad/a\t[new reference]\n\
                   \x20\trefs/notes/squad/b:refs/notes/squad/b\t1111111..2222222\n\
                   +\trefs/notes/squad/c:refs/notes/squad/c\t1111111...2222222 (forced update)\n\
                   =\trefs/notes/squad/d:refs/notes/squad/d\t[up to date]\n\
                   !\trefs/notes/squad/e:refs/notes/squad/e\t[rejected] (stale info)\n\
                   !\trefs/notes/squad/f:refs/notes/squad/f\t[remote rejected] (pre-receive hook declined)\n\
                   Done\n";
        let parsed = parse_porcelain(out);
        let statuses: Vec<_> = parsed
            .iter()
            .map(|(d, s)| (d.as_str(), s.clone()))
            .collect();
        assert_eq!(
            statuses,
            [
                ("refs/notes/squad/a", PushStatus::Created),
                ("refs/notes/squad/b", PushStatus::FastForward),
                ("refs/notes/squad/c", PushStatus::Forced),
                ("refs/notes/squad/d", PushStatus::UpToDate),
                ("refs/notes/squad/e", PushStatus::StaleLease),
                (
                    "refs/notes/squad/f",
                    PushStatus::Rejected {
                        reason: "pre-receive hook declined".into()
                    }
                ),
            ]
        );
    }

    #[test]
    fn only_refspecs_into_local_notes_are_flagged() {
        assert!(fetches_into_local_notes("refs/notes/*:refs/notes/*"));
        assert!(fetches_into_local_notes("+refs/notes/*:refs/notes/*"));
        assert!(fetches_into_local_notes(
            "+refs/notes/squad/*:refs/notes/squad/*"
        ));
        assert!(!fetches_into_local_notes(
            "+refs/notes/squad/*:refs/notes/remotes/origin/squad/*"
        ));
        assert!(!fetches_into_local_notes(
            "+refs/heads/*:refs/remotes/origin/*"
        ));
        assert!(!fetches_into_local_notes("refs/notes/*"));
        assert!(!fetches_into_local_notes("^refs/notes/x"));
    }
}
