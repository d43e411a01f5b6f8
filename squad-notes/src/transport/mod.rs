//! Moving notes (and state) between clones: the [`Transport`] trait and [`GitCliTransport`],
//! which shells out to the `git` command line.
//!
//! Two rules shape this module:
//!
//! - **A fetch never writes a local ref.** Remote refs land in remote-tracking refs only
//!   (`refs/notes/remotes/<remote>/squad/*` for notes, `refs/remotes/<remote>/…` for branches);
//!   merging them into the local refs is the caller's job (entry by entry, in Rust).
//! - **A push always carries a lease.** Each ref is pushed with
//!   `--force-with-lease=<ref>:<expected>`, so a remote that moved since the caller last looked
//!   rejects the push (reported per ref as [`PushStatus::StaleLease`]) instead of losing
//!   somebody's notes.
//!
//! [`GitCliTransport::setup`] writes the fetch refspecs that let plain `git fetch` / `git pull`
//! bring the notes (and the state branch) into tracking refs, and git's notes rewrite settings;
//! it keeps the user's own refspecs and reports those that fetch straight into local notes refs
//! (the seed's `refs/notes/*:refs/notes/*`, which makes `git fetch` fail or overwrite unpushed
//! notes). Every message built from git's output has credentials in URLs redacted
//! ([`redact_urls`]).

use std::fmt;

use crate::{Error, ErrorKind, Result};

mod git_cli;

pub use git_cli::{GitCliTransport, SetupOptions, SetupReport, redact_urls};

/// What to fetch: remote refs (`src`, may end in `/*`) into remote-tracking refs (`dst`).
///
/// The destination must lie in a tracking namespace of the remote being fetched:
/// `refs/notes/remotes/<remote>/` or `refs/remotes/<remote>/`. Tracking refs are always
/// force-updated, since they only mirror the remote. A refspec may end in `*` (both sides):
/// `refs/notes/squad/*` matches every ref below that directory, `refs/heads/squad-state*`
/// every branch whose name starts so (a glob that matches nothing is not an error, where an
/// exact name missing on the remote would fail the whole fetch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRefspec {
    src: String,
    dst: String,
}

impl FetchRefspec {
    /// A refspec fetching `src` into `dst` (checked against the remote when fetching).
    pub fn new(src: impl Into<String>, dst: impl Into<String>) -> Self {
        Self {
            src: src.into(),
            dst: dst.into(),
        }
    }

    /// Every squad notes ref: `refs/notes/squad/*` into `refs/notes/remotes/<remote>/squad/*`.
    pub fn notes(remote: &str) -> Self {
        Self::new(
            "refs/notes/squad/*",
            format!("refs/notes/remotes/{remote}/squad/*"),
        )
    }

    /// The remote ref (or glob).
    pub fn src(&self) -> &str {
        &self.src
    }

    /// The tracking ref (or glob).
    pub fn dst(&self) -> &str {
        &self.dst
    }

    /// Checks the refspec for `remote`.
    pub(crate) fn validate(&self, remote: &str) -> Result<()> {
        let bad = |why: String| {
            Err(Error::new(
                ErrorKind::InvalidInput,
                "transport.fetch",
                format!("invalid fetch refspec {self}: {why}"),
            ))
        };
        let notes_ns = format!("refs/notes/remotes/{remote}/");
        let branch_ns = format!("refs/remotes/{remote}/");
        if !(self.dst.starts_with(&notes_ns) || self.dst.starts_with(&branch_ns)) {
            return bad(format!(
                "the destination must be a tracking ref under {notes_ns} or {branch_ns}"
            ));
        }
        if self.src.ends_with('*') != self.dst.ends_with('*') {
            return bad("source and destination must both end in * or neither".into());
        }
        for part in [&self.src, &self.dst] {
            let plain = part.strip_suffix("/*").unwrap_or(part);
            let plain = plain.strip_suffix('*').unwrap_or(plain);
            if let Err(why) = check_ref_name(plain) {
                return bad(why);
            }
        }
        Ok(())
    }
}

impl fmt::Display for FetchRefspec {
    /// The refspec as git writes it: `+<src>:<dst>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "+{}:{}", self.src, self.dst)
    }
}

/// A ref as seen after a fetch: its full name and the commit it points at.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TrackingRef {
    /// The full name of the tracking ref, for example `refs/notes/remotes/origin/squad/data`.
    pub name: String,
    /// The hex id it points at.
    pub oid: String,
}

/// One ref to push, with its lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushUpdate {
    /// The local ref to push, for example `refs/notes/squad/data`.
    pub local: String,
    /// The remote ref to update (usually the same name).
    pub remote: String,
    /// The value the remote ref must have for the push to go through: `None` means it must not
    /// exist yet. Pass what the last fetch saw.
    pub expected: Option<String>,
}

impl PushUpdate {
    /// Pushes `name` to the same name on the remote, expecting the remote at `expected`.
    pub fn same_name(name: impl Into<String>, expected: Option<String>) -> Self {
        let name = name.into();
        Self {
            local: name.clone(),
            remote: name,
            expected,
        }
    }
}

/// What happened to one pushed ref.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PushStatus {
    /// The remote ref did not exist and was created.
    Created,
    /// The remote ref was fast-forwarded.
    FastForward,
    /// The remote ref was moved to a commit that does not contain the old one (the lease held).
    Forced,
    /// The remote ref already had this value.
    UpToDate,
    /// The remote ref was not at the expected value: fetch, merge and push again.
    StaleLease,
    /// The push of this ref was refused for another reason (a hook, a protected ref, …).
    Rejected {
        /// git's reason, for example `pre-receive hook declined`.
        reason: String,
    },
}

impl PushStatus {
    /// `true` when the remote ref now has the pushed value.
    pub fn is_accepted(&self) -> bool {
        matches!(
            self,
            PushStatus::Created
                | PushStatus::FastForward
                | PushStatus::Forced
                | PushStatus::UpToDate
        )
    }
}

/// The outcome for one [`PushUpdate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushResult {
    /// The remote ref.
    pub remote: String,
    /// What happened.
    pub status: PushStatus,
}

/// Moves refs between this repository and a remote.
///
/// The trait is synchronous (the git CLI is a blocking subprocess; the crate has no runtime) and
/// object safe.
///
/// # Contract
///
/// - A fetch writes remote-tracking refs only (see [`FetchRefspec`]); no local ref, HEAD, index or
///   work-tree file changes.
/// - A push carries a lease per ref and reports every ref's outcome; a lost race is a
///   [`PushStatus::StaleLease`] in the result, never a silent overwrite and never an `Err`.
/// - No credential is ever passed on a command line or in an error message; authentication is
///   left to the host's git configuration (credential helpers, ssh agent). Prompts are disabled.
///
/// # Behavior
///
/// - [`fetch`](Transport::fetch): returns every tracking ref under the refspecs' destinations
///   after the fetch, sorted by name. Tracking refs whose remote ref was deleted are pruned. A
///   glob that matches nothing on the remote is not an error (the result is empty).
/// - [`push`](Transport::push): one [`PushResult`] per update, in order. An empty list pushes
///   nothing. A local ref that does not exist is [`ErrorKind::NotFound`] and nothing is pushed.
/// - Errors: an invalid remote name, ref name or refspec is [`ErrorKind::InvalidInput`]; an
///   unknown remote is [`ErrorKind::NotFound`]; an unreachable remote or any other git failure
///   is [`ErrorKind::Backend`] with git's message.
///
/// # Implementing
///
/// Implement both methods. A transport talking to a hosting API would map the lease to the API's
/// compare-and-swap (for example a ref update with `force: false` and the expected sha).
pub trait Transport: Send + Sync + fmt::Debug {
    /// Fetches `refspecs` from `remote` into tracking refs and returns the tracking refs.
    fn fetch(&self, remote: &str, refspecs: &[FetchRefspec]) -> Result<Vec<TrackingRef>>;

    /// Pushes `updates` to `remote`, each with its lease.
    fn push(&self, remote: &str, updates: &[PushUpdate]) -> Result<Vec<PushResult>>;
}

macro_rules! forward_transport {
    ($($ty:ty),*) => {$(
        #[deny(clippy::missing_trait_methods)]
        impl<T: Transport + ?Sized> Transport for $ty {
            fn fetch(&self, remote: &str, refspecs: &[FetchRefspec]) -> Result<Vec<TrackingRef>> {
                (**self).fetch(remote, refspecs)
            }
            fn push(&self, remote: &str, updates: &[PushUpdate]) -> Result<Vec<PushResult>> {
                (**self).push(remote, updates)
            }
        }
    )*};
}

forward_transport!(Box<T>, std::sync::Arc<T>, &T);

/// Checks a remote name: 1 to 100 characters of `A-Z a-z 0-9 . _ - /`, not starting with `-`,
/// `.` or `/`, without `..` or `//`, not ending with `/`, `.` or `.lock`.
///
/// ```
/// use squad_notes::transport::validate_remote_name;
/// assert!(validate_remote_name("origin").is_ok());
/// assert!(validate_remote_name("--upload-pack=evil").is_err());
/// ```
pub fn validate_remote_name(remote: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::new(
            ErrorKind::InvalidInput,
            "transport.remote",
            format!("invalid remote name {remote:?}: {why}"),
        ))
    };
    if remote.is_empty() || remote.len() > 100 {
        return bad("it must have 1 to 100 characters");
    }
    if let Some(c) = remote
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/')))
    {
        return bad(&format!("the character {c:?} is not allowed"));
    }
    if remote.starts_with(['-', '.', '/']) {
        return bad("it must not start with '-', '.' or '/'");
    }
    if remote.contains("..") || remote.contains("//") {
        return bad("it must not contain '..' or '//'");
    }
    if remote.ends_with(['/', '.']) || remote.ends_with(".lock") {
        return bad("it must not end with '/', '.' or '.lock'");
    }
    Ok(())
}

/// git's ref-name rules, enough to keep names from being read as options or refspec syntax.
pub(crate) fn check_ref_name(name: &str) -> std::result::Result<(), String> {
    if !name.starts_with("refs/") {
        return Err(format!("{name:?} is not a full ref name (refs/…)"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| c.is_control() || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\'))
    {
        return Err(format!("{name:?} contains the character {c:?}"));
    }
    if name.contains("..")
        || name.contains("//")
        || name.contains("@{")
        || name.ends_with('/')
        || name.ends_with('.')
        || name.ends_with(".lock")
        || name.split('/').any(|s| s.is_empty() || s.starts_with('.'))
    {
        return Err(format!("{name:?} is not a valid ref name"));
    }
    Ok(())
}
