//! [`Transport`] over the `git` command line.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::{
    FetchRefspec, PushResult, PushStatus, PushUpdate, TrackingRef, Transport, check_ref_name,
    validate_remote_name,
};
use crate::{Error, ErrorKind, Result};

/// A [`Transport`] that runs the `git` binary (git 2.30 or newer) in a repository.
///
/// Authentication, proxies and ssh settings come from the repository's and the user's git
/// configuration, exactly as for a manual `git fetch`. Every command runs with
/// `GIT_TERMINAL_PROMPT=0` (a missing credential fails instead of hanging on a prompt) and with
/// stdin closed; nothing secret is ever put on a command line.
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

/// What [`GitCliTransport::setup`] changed in the remote's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetupReport {
    /// Fetch refspecs added to `remote.<name>.fetch`.
    pub added: Vec<String>,
    /// Fetch refspecs removed because they fetched straight into local notes refs.
    pub removed: Vec<String>,
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

    /// Configures `remote` so that plain `git fetch` and `git pull` bring the squad notes into
    /// `refs/notes/remotes/<remote>/squad/*` and never fail on, or overwrite, local notes.
    ///
    /// # Behavior
    ///
    /// - Adds `+refs/notes/squad/*:refs/notes/remotes/<remote>/squad/*` to
    ///   `remote.<remote>.fetch` unless it is there already (idempotent: a second run changes
    ///   nothing and reports nothing).
    /// - Removes every fetch refspec of that remote whose destination is a local notes ref
    ///   (under `refs/notes/` but not `refs/notes/remotes/`), such as the seed's
    ///   `refs/notes/*:refs/notes/*`: without a `+` it makes `git fetch` exit 1 as soon as local
    ///   notes differ from the remote's, and with a `+` it overwrites notes not pushed yet.
    /// - Leaves every other setting alone. Nothing is fetched.
    /// - An unknown remote is [`ErrorKind::NotFound`]; an invalid name is
    ///   [`ErrorKind::InvalidInput`].
    pub fn setup(&self, remote: &str) -> Result<SetupReport> {
        validate_remote_name(remote)?;
        self.require_remote(remote, "transport.setup")?;
        let key = format!("remote.{remote}.fetch");
        let existing = self.config_get_all(&key)?;
        let wanted = FetchRefspec::notes(remote).to_string();
        let mut report = SetupReport::default();
        for spec in &existing {
            if fetches_into_local_notes(spec) && !report.removed.contains(spec) {
                self.git_ok(
                    "transport.setup",
                    [
                        "config",
                        "--fixed-value",
                        "--unset-all",
                        key.as_str(),
                        spec.as_str(),
                    ],
                )?;
                report.removed.push(spec.clone());
            }
        }
        if !existing.contains(&wanted) {
            self.git_ok(
                "transport.setup",
                ["config", "--add", key.as_str(), wanted.as_str()],
            )?;
            report.added.push(wanted);
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
        self.command().args(&args).output().map_err(|e| {
            Error::new(
                ErrorKind::Backend,
                op,
                format!("cannot run {}", self.git.display()),
            )
            .with_source(e)
        })
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
    let kind = if stderr.contains("does not appear to be a git repository")
        || stderr.contains("not a git repository")
    {
        ErrorKind::NotFound
    } else {
        ErrorKind::Backend
    };
    Error::new(
        kind,
        op,
        format!(
            "git failed ({}): {}",
            out.status,
            if message.is_empty() {
                "no message".to_owned()
            } else {
                message.join(" / ")
            }
        ),
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
