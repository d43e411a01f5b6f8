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
//! - **Rate limits are honoured by us, visibly.** octocrab's retry layer is off; `Retry-After`,
//!   `x-ratelimit-remaining: 0` + `x-ratelimit-reset` and `x-poll-interval` pause
//!   [`GithubClient::wait`] through an injected [`Clock`], transient failures back off
//!   exponentially with jitter.
//! - **No secret leaks.** The token is read from `GITHUB_TOKEN` or `GH_TOKEN` at use time,
//!   moved into the HTTP client and never stored, printed or put in a [`GithubError`]. No
//!   octocrab, http or serde_json type appears in a public signature.
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
//! | wait | [`GithubClient::wait`] (its own loop, [`WaitOptions::timeout`] for `--timeout`), or [`GithubClient::step`] per host-scheduled poll; persist the [`PollState`] after each step |
//! | parse | any [`SignalParser`]: the crate's Markdown-aware parser wrapped to return [`Parsed`] with the gate id a command names |
//! | log ignored signals | [`WaitReport::rejected`] / [`Step::rejected`], each with a [`RejectReason`] |
//! | consume | [`GithubClient::recheck`] on [`Decision::candidate`]; act only on [`Verdict::Authorized`] |
//! | resolve | [`GithubClient::resolve`] with a [`Resolution`] |
//! | resume | deserialize the [`PollState`], [`GithubClient::resume`] to confirm the issue still shows that gate, then wait again |
//!
//! A [`WaitOutcome::TimedOut`] leaves the gate pending. A [`GithubError`] carries a
//! [`GithubErrorKind`] (`Config`, `Unauthorized`, `Forbidden`, `NotFound`, `RateLimited` with
//! [`GithubError::retry_after`], `Unavailable`, `Protocol`, `UntrustedIssue`, `Superseded`) to map onto the
//! crate's error kinds.
//!
//! Comments relayed by a GitHub Actions watcher (see `examples/github-approval-watcher.yml`) are
//! written by a bot and therefore never count here: the poller reads the human's own comment or
//! label event and applies the same checks itself.
//!
//! ```no_run
//! # async fn demo() -> Result<(), squad_notify::github::GithubError> {
//! use squad_notify::github::*;
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
//! let report = client.wait(&mut state, &parser, &WaitOptions::default()).await?;
//! if let WaitOutcome::Decided(d) = report.outcome {
//!     if client.recheck(&state, &d.candidate).await?.is_authorized() {
//!         client
//!             .resolve(state.issue, &Resolution {
//!                 gate_id: state.gate_id.clone(),
//!                 outcome: d.signal,
//!                 by: d.candidate.actor.login.clone(),
//!                 at: squad_model::Timestamp::now(),
//!                 note: None,
//!             })
//!             .await?;
//!     }
//! }
//! # Ok(())
//! # }
//! ```

pub mod body;
mod channel;
mod client;
mod clock;
mod config;
mod error;
mod poll;
mod types;
mod wire;

pub use body::{APPROVAL_LABEL, GateBlock, IssuePayload};
pub use channel::{CommandParser, CrateClock, GithubIssueChannel};
pub use client::{CHANGES_REQUESTED_LABEL, GithubClient, Identity, OpenedGate};
pub use clock::{Clock, SystemClock};
pub use config::{DEFAULT_API_URL, GithubConfig, Login, RepoSlug, Token};
pub use error::{GithubError, GithubErrorKind, GithubResult};
pub use poll::{
    Decision, Parsed, PollOutcome, PollState, SignalParser, Step, WaitOptions, WaitOutcome,
    WaitReport,
};
pub use types::{
    Actor, ActorKind, ApprovalIssue, AuthorizedAs, Candidate, CandidateContent, CollaboratorRole,
    Outcome, RejectReason, Rejection, Resolution, SignalSource, Verdict,
};
