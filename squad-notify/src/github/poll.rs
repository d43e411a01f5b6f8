//! Waiting for a decision: conditional polling of comments and label events, filtering,
//! authorization, rate-limit handling.

use std::collections::BTreeMap;
use std::time::Duration;

use http::{Method, StatusCode};
use serde::{Deserialize, Serialize};
use squad_model::Timestamp;

use super::client::{GithubClient, Identity, Reply};
use super::types::{
    AuthorizedAs, Candidate, CandidateContent, RejectReason, Rejection, SignalSource, Verdict,
};
use super::wire;
use crate::error::{ErrorKind, Result};

const PER_PAGE: usize = 100;
const MAX_PAGES: u32 = 50;

/// Where waiting on one gate stands: serialize it into `state.json` next to the pending gate,
/// and a fresh process resumes on the same issue and gate with the same ETags (so its first poll
/// of an unchanged issue is still a free 304).
///
/// It holds no secret (ETags are opaque validators).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PollState {
    /// The approval issue number.
    pub issue: u64,
    /// The gate being waited on; commands naming another gate do not count.
    pub gate_id: String,
    /// GitHub's timestamp of the write that opened the gate: anything created at or before it
    /// does not count.
    pub gate_opened_at: Timestamp,
    /// The registered approver's login.
    pub approver: String,
    /// The registered approver's numeric id, when known (then it, not the login, is compared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver_id: Option<u64>,
    comments_since: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    comments_etag: Option<String>,
    #[serde(default)]
    seen_comments: BTreeMap<u64, Timestamp>,
    events_page: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    events_etag: Option<String>,
    #[serde(default)]
    last_event_id: u64,
}

impl PollState {
    /// A fresh state for `gate_id` on issue `issue`, opened at `gate_opened_at` (GitHub's time).
    pub fn new(
        issue: u64,
        gate_id: &str,
        gate_opened_at: Timestamp,
        approver: &str,
        approver_id: Option<u64>,
    ) -> Self {
        Self {
            issue,
            gate_id: gate_id.to_owned(),
            gate_opened_at,
            approver: approver.to_owned(),
            approver_id,
            comments_since: gate_opened_at,
            comments_etag: None,
            seen_comments: BTreeMap::new(),
            events_page: 1,
            events_etag: None,
            last_event_id: 0,
        }
    }
}

/// What one poll found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PollOutcome {
    /// New comments and label events that passed the filters, oldest first. They still need a
    /// parse and an authorization check ([`GithubClient::step`] does both).
    pub candidates: Vec<Candidate>,
    /// New comments and label events that do not count, with the reason (to be logged).
    pub rejected: Vec<Rejection>,
    /// HTTP requests made.
    pub requests: u32,
    /// Of those, answered `304 Not Modified` (free of rate limit).
    pub not_modified: u32,
    /// The wait GitHub asked for before the next poll (`x-poll-interval`, or until
    /// `x-ratelimit-reset` when no request is left), when it asked.
    pub wait_hint: Option<Duration>,
}

/// A parsed command or label: the signal, and the gate id it names if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed<S> {
    /// The caller's signal (approve, approve-all, changes with its note, stop...).
    pub signal: S,
    /// The gate the command names (`/approve g-7f3a`), when it names one.
    pub gate: Option<String>,
}

/// Turns a candidate's content into a signal; `None` for anything that is not a command.
///
/// The crate's Markdown-aware parser implements it; any `Fn(&CandidateContent) ->
/// Option<Parsed<S>> + Send + Sync` closure does too.
pub trait SignalParser<S>: Send + Sync {
    /// Parses `content`.
    fn parse(&self, content: &CandidateContent) -> Option<Parsed<S>>;
}

impl<S, F> SignalParser<S> for F
where
    F: Fn(&CandidateContent) -> Option<Parsed<S>> + Send + Sync,
{
    fn parse(&self, content: &CandidateContent) -> Option<Parsed<S>> {
        self(content)
    }
}

/// An authorized decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision<S> {
    /// The parsed signal.
    pub signal: S,
    /// The comment or label event it came from.
    pub candidate: Candidate,
    /// Why its actor may decide (checked when it was found; check again with
    /// [`GithubClient::recheck`] when consuming it).
    pub authorized_as: AuthorizedAs,
}

/// The result of one [`GithubClient::step`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step<S> {
    /// The first authorized decision, if one arrived.
    pub decision: Option<Decision<S>>,
    /// The authorized decisions after the first, oldest first (with a quorum each approver's
    /// answer counts; a later one after a deciding answer is logged as ignored).
    pub more: Vec<Decision<S>>,
    /// What was seen and does not count, with the reason, oldest first.
    pub rejected: Vec<Rejection>,
    /// HTTP requests made by the poll (authorization checks excluded).
    pub requests: u32,
    /// Of those, answered `304 Not Modified`.
    pub not_modified: u32,
    /// The wait GitHub asked for before the next poll, when it asked.
    pub wait_hint: Option<Duration>,
}

fn prefilter(c: &Candidate, opened: Timestamp) -> Option<RejectReason> {
    if c.created_at <= opened {
        Some(RejectReason::BeforeGate)
    } else if c.is_edited() {
        Some(RejectReason::Edited)
    } else if c.actor.is_self {
        Some(RejectReason::OwnAccount)
    } else if c.actor.is_bot() {
        Some(RejectReason::Bot)
    } else if c.actor.id == 0 {
        Some(RejectReason::UnknownActor)
    } else {
        None
    }
}

impl GithubClient {
    fn hint(&self, reply: &Reply) -> Option<Duration> {
        let poll = reply
            .header("x-poll-interval")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let limit = self.rate_limit_wait(reply);
        poll.max(limit)
    }

    /// Polls the issue once: the comments updated since the last poll (`since`, 100 per page,
    /// following `Link` pages) and the issue events after the last one seen, each with
    /// `If-None-Match` so that an unchanged issue costs two free 304s. Each new comment or
    /// `labeled` event comes back once, as a candidate or as a rejection: created at or before
    /// the gate opened, edited (also: seen before and updated since), by the squad's own account,
    /// by a bot, or by a deleted account. `state` is updated.
    ///
    /// # Errors
    ///
    /// Request errors; `state` is then unchanged.
    pub async fn poll(&self, state: &mut PollState) -> Result<PollOutcome> {
        let own = self.identity().await?;
        let mut next = state.clone();
        let mut out = PollOutcome::default();
        self.poll_comments(&mut next, &own, &mut out).await?;
        self.poll_events(&mut next, &own, &mut out).await?;
        out.candidates.sort_by_key(|c| c.created_at);
        *state = next;
        Ok(out)
    }

    async fn poll_comments(
        &self,
        st: &mut PollState,
        own: &Identity,
        out: &mut PollOutcome,
    ) -> Result<()> {
        const OP: &str = "list comments";
        let first = format!(
            "{}/issues/{}/comments?since={}&per_page={PER_PAGE}",
            self.repo_path(),
            st.issue,
            st.comments_since
        );
        let reply = self
            .send(OP, Method::GET, &first, None, st.comments_etag.as_deref())
            .await?;
        out.requests += 1;
        out.wait_hint = out.wait_hint.max(self.hint(&reply));
        if reply.status == StatusCode::NOT_MODIFIED {
            out.not_modified += 1;
            return Ok(());
        }
        let etag = reply.header("etag").map(str::to_owned);
        let mut comments: Vec<wire::Comment> = reply.json(OP)?;
        let mut link = reply.next_link();
        let mut pages = 1;
        while let Some(url) = link {
            pages += 1;
            if pages > MAX_PAGES {
                return Err(super::gh(ErrorKind::Protocol, OP, "too many pages"));
            }
            let path = self.relative(OP, &url)?;
            let page = self.send(OP, Method::GET, &path, None, None).await?;
            out.requests += 1;
            comments.extend(page.json::<Vec<wire::Comment>>(OP)?);
            link = page.next_link();
        }
        let mut newest = st.comments_since;
        for c in comments {
            newest = newest.max(c.updated_at);
            let previous = st.seen_comments.insert(c.id, c.updated_at);
            if previous == Some(c.updated_at) {
                continue;
            }
            let candidate = Candidate {
                source: SignalSource::Comment { id: c.id },
                actor: self.actor(c.user.as_ref(), own),
                created_at: c.created_at,
                updated_at: c.updated_at,
                content: CandidateContent::Comment(c.body.unwrap_or_default()),
                author_association: c.author_association,
            };
            let reason = prefilter(&candidate, st.gate_opened_at)
                .or_else(|| previous.map(|_| RejectReason::Edited));
            match reason {
                Some(reason) => out.rejected.push(Rejection { candidate, reason }),
                None => out.candidates.push(candidate),
            }
        }
        // The next `since` stays one second behind the newest update seen, so that a comment
        // posted in the same second as the last one seen is not skipped; the ones already seen
        // come back and are recognised by `seen_comments`.
        let since = newest.plus_seconds(-1).max(st.comments_since);
        if since == st.comments_since {
            st.comments_etag = etag;
        } else {
            // A new `since` is a new URL: its first answer brings the ETag to keep.
            st.comments_since = since;
            st.comments_etag = None;
            st.seen_comments.retain(|_, updated| *updated >= since);
        }
        Ok(())
    }

    async fn poll_events(
        &self,
        st: &mut PollState,
        own: &Identity,
        out: &mut PollOutcome,
    ) -> Result<()> {
        const OP: &str = "list issue events";
        let path = |page: u32| {
            format!(
                "{}/issues/{}/events?per_page={PER_PAGE}&page={page}",
                self.repo_path(),
                st.issue
            )
        };
        let reply = self
            .send(
                OP,
                Method::GET,
                &path(st.events_page),
                None,
                st.events_etag.as_deref(),
            )
            .await?;
        out.requests += 1;
        out.wait_hint = out.wait_hint.max(self.hint(&reply));
        if reply.status == StatusCode::NOT_MODIFIED {
            out.not_modified += 1;
            return Ok(());
        }
        let mut page = st.events_page;
        let mut etag = reply.header("etag").map(str::to_owned);
        let mut batch: Vec<wire::IssueEvent> = reply.json(OP)?;
        let mut events = Vec::new();
        // Walk forward while pages are full; the last, non-full page is the one to watch (a
        // full page would never change again, so its ETag would hide new events).
        loop {
            let full = batch.len() >= PER_PAGE;
            events.append(&mut batch);
            if !full {
                break;
            }
            if page >= st.events_page + MAX_PAGES {
                return Err(super::gh(ErrorKind::Protocol, OP, "too many pages"));
            }
            page += 1;
            let reply = self.send(OP, Method::GET, &path(page), None, None).await?;
            out.requests += 1;
            etag = reply.header("etag").map(str::to_owned);
            batch = reply.json(OP)?;
        }
        st.events_page = page;
        st.events_etag = etag;
        for e in events {
            if e.id <= st.last_event_id {
                continue;
            }
            st.last_event_id = e.id;
            let (true, Some(label)) = (e.event == "labeled", e.label) else {
                continue;
            };
            let candidate = Candidate {
                source: SignalSource::Label { event_id: e.id },
                actor: self.actor(e.actor.as_ref(), own),
                created_at: e.created_at,
                updated_at: e.created_at,
                content: CandidateContent::Label(label.name),
                author_association: None,
            };
            match prefilter(&candidate, st.gate_opened_at) {
                Some(reason) => out.rejected.push(Rejection { candidate, reason }),
                None => out.candidates.push(candidate),
            }
        }
        Ok(())
    }

    /// Checks a decision again at the moment it is consumed: the comment must still exist,
    /// unedited and with the same body (a label must still be on the issue), and its actor must
    /// still be authorized ([`GithubClient::authorize`]).
    ///
    /// # Errors
    ///
    /// Request errors (the caller must not consume the decision then).
    pub async fn recheck(&self, state: &PollState, candidate: &Candidate) -> Result<Verdict> {
        let own = self.identity().await?;
        let actor = match (&candidate.source, &candidate.content) {
            (SignalSource::Comment { id }, CandidateContent::Comment(body)) => {
                let path = format!("{}/issues/comments/{id}", self.repo_path());
                let fresh: wire::Comment = match self.get_json("recheck comment", &path).await {
                    Ok(c) => c,
                    Err(e) if e.kind() == ErrorKind::NotFound => {
                        return Ok(Verdict::Refused(RejectReason::Retracted));
                    }
                    Err(e) => return Err(e),
                };
                if fresh.updated_at != fresh.created_at || fresh.updated_at != candidate.updated_at
                {
                    return Ok(Verdict::Refused(RejectReason::Edited));
                }
                if fresh.body.as_deref().unwrap_or_default() != body {
                    return Ok(Verdict::Refused(RejectReason::Retracted));
                }
                self.actor(fresh.user.as_ref(), &own)
            }
            (SignalSource::Label { .. }, CandidateContent::Label(name)) => {
                let path = format!("{}/issues/{}", self.repo_path(), state.issue);
                let issue: wire::Issue = self.get_json("recheck label", &path).await?;
                if !issue.labels.iter().any(|l| &l.name == name) {
                    return Ok(Verdict::Refused(RejectReason::Retracted));
                }
                candidate.actor.clone()
            }
            _ => return Ok(Verdict::Refused(RejectReason::NotACommand)),
        };
        if actor.id != candidate.actor.id {
            return Ok(Verdict::Refused(RejectReason::Retracted));
        }
        self.authorize(&actor, state).await
    }

    /// One step of waiting: one [`GithubClient::poll`], then each new candidate, oldest first, is
    /// parsed with `parser`, checked against the gate id, and authorized (every authorized one is
    /// returned: the first in `decision`, the others in `more`).
    /// `state` advances only when every candidate was handled, so a failed authorization check
    /// is retried by the next step and nothing is lost. [`super::GithubIssueChannel`] runs one
    /// step per poll of the crate's wait loop ([`crate::Waiter`]); a host that schedules its own
    /// polling calls it directly, pausing as [`crate::Pacer`] says between steps.
    ///
    /// # Errors
    ///
    /// Request errors (`state` is then unchanged); a rate limit is [`ErrorKind::RateLimited`]
    /// with [`Error::retry_after`](crate::Error::retry_after).
    pub async fn step<S>(
        &self,
        state: &mut PollState,
        parser: &dyn SignalParser<S>,
    ) -> Result<Step<S>> {
        let mut next = state.clone();
        let out = self.poll(&mut next).await?;
        let mut rejected = out.rejected;
        let mut decision = None;
        let mut more = Vec::new();
        for candidate in out.candidates {
            let Some(parsed) = parser.parse(&candidate.content) else {
                rejected.push(Rejection {
                    candidate,
                    reason: RejectReason::NotACommand,
                });
                continue;
            };
            if let Some(named) = parsed
                .gate
                .filter(|g| !g.eq_ignore_ascii_case(&next.gate_id))
            {
                rejected.push(Rejection {
                    candidate,
                    reason: RejectReason::OtherGate { named },
                });
                continue;
            }
            match self.authorize(&candidate.actor, &next).await? {
                Verdict::Authorized(authorized_as) => {
                    let found = Decision {
                        signal: parsed.signal,
                        candidate,
                        authorized_as,
                    };
                    if decision.is_none() {
                        decision = Some(found);
                    } else {
                        more.push(found);
                    }
                }
                Verdict::Refused(reason) => rejected.push(Rejection { candidate, reason }),
            }
        }
        rejected.sort_by_key(|r| r.candidate.created_at);
        *state = next;
        Ok(Step {
            decision,
            more,
            rejected,
            requests: out.requests,
            not_modified: out.not_modified,
            wait_hint: out.wait_hint,
        })
    }
}
