//! The GitHub REST layer of the `github-issue` approval channel (feature `github`).
//!
//! A squad run that hits a gate opens (or reuses) one approval issue per run, assigns and
//! @mentions the approver, and waits for an authorized decision in a comment or a label. This
//! module does the REST part of that protocol, and [`GithubIssueChannel`] glues it to the crate's
//! `ApprovalChannel` trait, command parser and gate state machine.
//!
//! # Design
//!
//! - **Trust comes only from our own writing.** The gate block (gate id, digest, `Approver:`)
//!   is read back only from an issue body whose author is the squad's own account, between fixed
//!   markers that agent-supplied text cannot produce ([`body::neutralize`]). An `Approver:` line
//!   in a comment, or anywhere else in the body, is never read.
//! - **A decision must be new, unedited and human.** Comments created at or before the gate
//!   opened (GitHub's own timestamp of the write that opened it), comments edited after creation,
//!   comments and labels by bots or by the squad's own account do not count; labels are
//!   authorized by the actor of their `labeled` event, never by their presence.
//! - **Authorization by role, checked twice.** The registered approver (by numeric id), or a
//!   collaborator whose `role_name` is `admin`, `maintain` or `write` (raw GET, because octocrab's
//!   typed permission enum cannot read `write`/`read`/`none`). [`GithubClient::recheck`] repeats
//!   the check, and re-reads the comment, when the decision is consumed.
//! - **Cheap polling.** Comments are listed with `since` and `per_page=100` (following `Link`
//!   pages), events from the last non-full page, both with `If-None-Match`: an unchanged issue
//!   costs two 304s per poll, which do not count against the rate limit. The [`PollState`] is
//!   serializable so a fresh process resumes with the same ETags.
//! - **Rate limits are honoured by us, visibly.** octocrab's retry layer is off; `Retry-After`
//!   and `x-ratelimit-remaining: 0` + `x-ratelimit-reset` come back as
//!   [`ErrorKind::RateLimited`](crate::ErrorKind::RateLimited) with
//!   [`Error::retry_after`](crate::Error::retry_after), `x-poll-interval` as
//!   [`Step::wait_hint`]; the crate's wait loop ([`crate::Waiter`], paced by [`crate::Pacer`])
//!   pauses accordingly, and backs off transient failures exponentially with jitter. Writes are
//!   spaced a second apart ([`GithubClient::with_write_spacing`]).
//! - **No secret leaks.** The token is read from `GITHUB_TOKEN` or `GH_TOKEN` at use time,
//!   moved into the HTTP client and never stored, printed or put in an error. No octocrab, http
//!   or serde_json type appears in a public signature.
//!
//! # Plugging it into an approval channel
//!
//! [`GithubIssueChannel`] is that channel (`github-issue`): it follows this table, with the
//! crate's parser as [`CommandParser`]. A host that drives the REST layer itself maps the steps
//! like this:
//!
//! | Channel step | Call |
//! |---|---|
//! | notify a gate | [`GithubClient::open_gate`] with the run id, gate id, digest and [`IssuePayload`]; keep [`OpenedGate::state`] with the pending gate in `state.json` and the issue number and URL for `notifications.md` |
//! | wait | [`GithubClient::step`] per poll, pausing between polls as [`crate::Pacer`] says (the interval, GitHub's hints, a jittered backoff after failures); persist the [`PollState`] after each step |
//! | parse | any [`SignalParser`]: the crate's Markdown-aware parser wrapped to return [`Parsed`] with the gate id a command names |
//! | log ignored signals | [`Step::rejected`], each with a [`RejectReason`] |
//! | consume | [`GithubClient::recheck`] on [`Decision::candidate`]; act only on [`Verdict::Authorized`] |
//! | resolve | [`GithubClient::resolve`] with a [`Resolution`] |
//! | resume | deserialize the [`PollState`], [`GithubClient::resume`] to confirm the issue still shows that gate, then poll again |
//!
//! Errors are the crate's [`Error`](crate::Error): a missing token is
//! [`Unavailable`](crate::ErrorKind::Unavailable) (degrade to in-chat), a bad setting
//! [`InvalidInput`](crate::ErrorKind::InvalidInput), 401 `Unauthorized`, 403 `Forbidden`, a rate
//! limit `RateLimited` with [`Error::retry_after`](crate::Error::retry_after), 404 `NotFound`,
//! 5xx or unreachable `Delivery`, an unreadable answer `Protocol`, an issue we did not write
//! `Untrusted`, an issue that shows a later gate `Superseded`.
//!
//! Comments relayed by a GitHub Actions watcher (see `examples/github-approval-watcher.yml`) are
//! written by a bot and therefore never count here: the poller reads the human's own comment or
//! label event and applies the same checks itself.
//!
//! ```no_run
//! # async fn demo() -> Result<(), squad_notify::Error> {
//! use squad_notify::github::*;
//! use squad_notify::{Pacer, PacerOptions, SystemClock, Clock};
//!
//! let config = GithubConfig::from_env("acme/widgets", "octocat")?;
//! let client = GithubClient::from_env(config)?;
//! let payload = IssuePayload {
//!     mode: "autopilot".into(),
//!     trigger: "impactful-action".into(),
//!     topic: "Deploy billing".into(),
//!     awaiting: "Approve the production deploy".into(),
//!     detail: "Tests pass.\nThe deploy runs the migration.".into(),
//! };
//! let opened = client.open_gate("run-42", "g-7f3a", "sha256-1c9e", &payload).await?;
//! let mut state = opened.state; // persist this in state.json to resume
//! let parser = |c: &CandidateContent| match c {
//!     CandidateContent::Comment(b) if b.trim() == "/approve" => {
//!         Some(Parsed { signal: Outcome::Approved, gate: None })
//!     }
//!     _ => None,
//! };
//! let mut pacer = Pacer::new(SystemClock.now(), &PacerOptions::default());
//! let decision = loop {
//!     // The pacer says how long to pause after each step (a real host sleeps here).
//!     let pause = match client.step(&mut state, &parser).await {
//!         Ok(Step { decision: Some(d), .. }) => break d,
//!         Ok(step) => pacer.after_poll(SystemClock.now(), None, step.wait_hint),
//!         Err(e) if e.is_retryable() => pacer.after_poll(SystemClock.now(), Some(&e), None),
//!         Err(e) => return Err(e),
//!     };
//!     tokio::time::sleep(pause).await;
//! };
//! if client.recheck(&state, &decision.candidate).await?.is_authorized() {
//!     client
//!         .resolve(state.issue, &Resolution {
//!             gate_id: state.gate_id.clone(),
//!             outcome: decision.signal,
//!             by: decision.candidate.actor.login.clone(),
//!             at: squad_model::Timestamp::now(),
//!             note: None,
//!         })
//!         .await?;
//! }
//! # Ok(())
//! # }
//! ```

pub mod body;
mod channel;
mod client;
mod config;
mod poll;
mod types;
mod wire;

pub use body::{APPROVAL_LABEL, GateBlock, IssuePayload};
pub use channel::{CommandParser, GithubIssueChannel};
pub use client::{
    CHANGES_REQUESTED_LABEL, DEFAULT_WRITE_SPACING, GithubClient, Identity, OpenedGate,
};
pub use config::{DEFAULT_API_URL, GithubConfig, Login, RepoSlug, Token};
pub use poll::{Decision, Parsed, PollOutcome, PollState, SignalParser, Step};
pub use types::{
    Actor, ActorKind, ApprovalIssue, AuthorizedAs, Candidate, CandidateContent, CollaboratorRole,
    Outcome, RejectReason, Rejection, Resolution, SignalSource, Verdict,
};

/// An error of the GitHub layer without an HTTP status.
pub(crate) fn gh(
    kind: crate::ErrorKind,
    op: &'static str,
    message: impl std::fmt::Display,
) -> crate::Error {
    crate::Error::github(kind, op, None, message)
}
