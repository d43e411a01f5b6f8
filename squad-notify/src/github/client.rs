//! The REST client: octocrab as transport, our own requests and response handling.
//!
//! Every request goes through [`GithubClient::send`]: a relative path (so octocrab adds the token
//! and the configured base, GitHub Enterprise path prefix included), our own headers
//! (`If-None-Match` for conditional polling), and our own status classification. octocrab's retry
//! layer is turned off: a rate limit comes back as an error carrying how long GitHub asked to
//! wait ([`Error::retry_after`]), and the host's wait loop ([`crate::Waiter`]) pauses on its own
//! clock, so that waiting can be tested without sleeping and stays visible to the caller.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use http::header::{ACCEPT, HeaderMap, IF_NONE_MATCH};
use http::{Method, StatusCode};
use serde::de::DeserializeOwned;

use super::body::{
    APPROVAL_LABEL, GateBlock, IssuePayload, check_token, neutralize, parse_gate_block,
    parse_run_marker, render_body, render_title,
};
use super::config::{GithubConfig, Login, Token};
use super::poll::PollState;
use super::types::{
    Actor, ActorKind, ApprovalIssue, AuthorizedAs, CollaboratorRole, Outcome, RejectReason,
    Resolution, Verdict,
};
use super::wire;
use crate::clock::{Clock, SystemClock};
use crate::error::{Error, ErrorKind, Result};

/// The label a changes request leaves on the (still open) issue.
pub const CHANGES_REQUESTED_LABEL: &str = "squad/changes-requested";

/// At most this many pages are followed in one listing (a guard against a Link loop).
const MAX_PAGES: usize = 50;

/// The least time between two writes by default (GitHub's advice against secondary rate limits).
pub const DEFAULT_WRITE_SPACING: Duration = Duration::from_secs(1);

/// The squad's own account, as the token sees itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The login.
    pub login: String,
    /// The numeric id, when known (always when it came from `GET /user`).
    pub id: Option<u64>,
}

impl Identity {
    /// Whether `user` is this account (by id when known, else by login).
    pub(crate) fn is(&self, login: &str, id: u64) -> bool {
        match self.id {
            Some(own) => own == id,
            None => self.login.eq_ignore_ascii_case(login),
        }
    }
}

/// The result of [`GithubClient::open_gate`].
#[derive(Debug, Clone, PartialEq)]
pub struct OpenedGate {
    /// The run's approval issue, showing the new gate.
    pub issue: ApprovalIssue,
    /// Whether an open issue of the run was reused rather than created.
    pub reused: bool,
    /// The poll state to wait on this gate (persist it in `state.json` to resume).
    pub state: PollState,
}

/// A raw answer.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub(crate) fn json<T: DeserializeOwned>(&self, op: &'static str) -> Result<T> {
        serde_json::from_str(&self.body).map_err(|e| {
            Error::github(
                ErrorKind::Protocol,
                op,
                Some(self.status.as_u16()),
                format!("unexpected JSON from GitHub ({e})"),
            )
        })
    }

    /// The `rel="next"` target of the `Link` header.
    pub(crate) fn next_link(&self) -> Option<String> {
        let link = self.header("link")?;
        link.split(',').find_map(|part| {
            let (url, params) = part.split_once(';')?;
            let is_next = params
                .split(';')
                .any(|p| p.trim().replace(' ', "") == "rel=\"next\"");
            is_next.then(|| {
                url.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_owned()
            })
        })
    }
}

/// A client of the GitHub REST API for approval issues.
///
/// It holds the HTTP client (with the token inside it), the [`GithubConfig`] and a [`Clock`]
/// (the time that rate-limit resets are compared with). `Debug` shows the configuration only.
pub struct GithubClient {
    gh: octocrab::Octocrab,
    config: GithubConfig,
    base: http::Uri,
    clock: Arc<dyn Clock>,
    identity: OnceLock<Identity>,
    /// The least time between two writes.
    write_spacing: Duration,
    /// When the last write was answered (monotonic), to space writes out.
    last_write: Mutex<Option<tokio::time::Instant>>,
}

impl fmt::Debug for GithubClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GithubClient")
            .field("config", &self.config)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

fn transport(op: &'static str, e: octocrab::Error) -> Error {
    // octocrab's own message may name the URL; it stays the source, never the message.
    super::gh(ErrorKind::Delivery, op, "GitHub could not be reached").with_source(e)
}

impl GithubClient {
    /// A client for `config`, authenticating with `token` (which is moved into the HTTP client and
    /// not kept anywhere else). Call it inside a tokio runtime (the HTTP stack spawns its
    /// connection tasks there).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] when the HTTP client cannot be built for the API base.
    pub fn new(config: GithubConfig, token: Token) -> Result<Self> {
        let bad = |e: octocrab::Error| {
            super::gh(
                ErrorKind::InvalidInput,
                "build client",
                "cannot build the HTTP client for the API base",
            )
            .with_source(e)
        };
        let base: http::Uri = config
            .api_base()
            .parse()
            .map_err(|_| super::gh(ErrorKind::InvalidInput, "build client", "bad API base URL"))?;
        let gh = octocrab::Octocrab::builder()
            .base_uri(config.api_base())
            .map_err(bad)?
            .add_retry_config(octocrab::service::middleware::retry::RetryConfig::None)
            .set_connect_timeout(Some(Duration::from_secs(10)))
            .set_read_timeout(Some(Duration::from_secs(30)))
            .personal_token(token.into_secret())
            .build()
            .map_err(bad)?;
        Ok(Self {
            gh,
            config,
            base,
            clock: Arc::new(SystemClock),
            identity: OnceLock::new(),
            write_spacing: DEFAULT_WRITE_SPACING,
            last_write: Mutex::new(None),
        })
    }

    /// A client for `config` with the token from `GITHUB_TOKEN` or `GH_TOKEN`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] when neither variable holds a token.
    pub fn from_env(config: GithubConfig) -> Result<Self> {
        Self::new(config, Token::from_env()?)
    }

    /// Uses `clock` for the time (tests pass a clock they move by hand).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Spaces writes (issue creation, comments, labels): each waits until `spacing` has passed
    /// since the previous write was answered, on the monotonic timer of the tokio runtime. The default is [`DEFAULT_WRITE_SPACING`], GitHub's
    /// advice against secondary rate limits; `Duration::ZERO` turns pacing off (for a host that
    /// paces its requests itself, and for tests).
    pub fn with_write_spacing(mut self, spacing: Duration) -> Self {
        self.write_spacing = spacing;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &GithubConfig {
        &self.config
    }

    pub(crate) fn repo_path(&self) -> String {
        let r = self.config.repo();
        format!("/repos/{}/{}", r.owner(), r.name())
    }

    /// Turns a pagination URL into a path under our base; refuses another host.
    pub(crate) fn relative(&self, op: &'static str, url: &str) -> Result<String> {
        let uri: http::Uri = url
            .parse()
            .map_err(|_| super::gh(ErrorKind::Protocol, op, "bad pagination link"))?;
        if uri.authority().is_some() && uri.authority() != self.base.authority() {
            return Err(super::gh(
                ErrorKind::Protocol,
                op,
                "pagination link points at another host",
            ));
        }
        Ok(uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned()))
    }

    /// Sends one request and classifies the answer: 2xx and 304 are returned, anything else is an
    /// error (401 `Unauthorized`; 403/429 with `Retry-After`, `x-ratelimit-remaining: 0` or a
    /// rate-limit message `RateLimited`; other 403 `Forbidden`; 404/410 `NotFound`; 5xx
    /// `Unavailable`; the rest `Protocol`).
    pub(crate) async fn send(
        &self,
        op: &'static str,
        method: Method,
        path: &str,
        body: Option<&serde_json::Value>,
        etag: Option<&str>,
    ) -> Result<Reply> {
        let write = method != Method::GET;
        if write {
            self.pace_write().await;
        }
        let mut builder = http::Request::builder()
            .method(method)
            .uri(path)
            .header(ACCEPT, "application/vnd.github+json");
        if let Some(etag) = etag {
            builder = builder.header(IF_NONE_MATCH, etag);
        }
        let request = self
            .gh
            .build_request(builder, body)
            .map_err(|e| transport(op, e))?;
        let response = self.gh.execute(request).await;
        if write {
            self.wrote();
        }
        let response = response.map_err(|e| {
            tracing::debug!(op, "github request failed before an answer");
            transport(op, e)
        })?;
        let status = response.status();
        let headers = response.headers().clone();
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        // The path and the rate-limit headers only: never a token, a body or a full URL.
        tracing::debug!(
            op,
            path = path.split('?').next().unwrap_or_default(),
            status = status.as_u16(),
            ratelimit_remaining = header("x-ratelimit-remaining"),
            ratelimit_reset = header("x-ratelimit-reset"),
            retry_after = header("retry-after"),
            "github request"
        );
        let body = self
            .gh
            .body_to_string(response)
            .await
            .map_err(|e| transport(op, e))?;
        let reply = Reply {
            status,
            headers,
            body,
        };
        if status.is_success() || status == StatusCode::NOT_MODIFIED {
            Ok(reply)
        } else {
            Err(self.classify(op, &reply))
        }
    }

    /// Waits until [`GithubClient::with_write_spacing`] has passed since the previous write was
    /// answered.
    async fn pace_write(&self) {
        if self.write_spacing.is_zero() {
            return;
        }
        let last = *self
            .last_write
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(last) = last {
            tokio::time::sleep_until(last + self.write_spacing).await;
        }
    }

    /// Notes that a write was answered (or failed).
    fn wrote(&self) {
        *self
            .last_write
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(tokio::time::Instant::now());
    }

    fn classify(&self, op: &'static str, reply: &Reply) -> Error {
        let code = reply.status.as_u16();
        let message = serde_json::from_str::<wire::ErrorBody>(&reply.body)
            .map(|b| b.message)
            .unwrap_or_default();
        let short: String = message.chars().take(200).collect();
        let err = |kind, text: &str| Error::github(kind, op, Some(code), text);
        match code {
            401 => err(ErrorKind::Unauthorized, "GitHub refused the token"),
            403 | 429 => match self.rate_limit_wait(reply) {
                Some(wait) => err(
                    ErrorKind::RateLimited,
                    &format!("rate limited (retry in {} s)", wait.as_secs()),
                )
                .with_retry_after(wait),
                None if code == 429 || short.to_ascii_lowercase().contains("rate limit") => {
                    // No header says how long: GitHub's guidance is at least a minute.
                    err(ErrorKind::RateLimited, "rate limited (retry in 60 s)")
                        .with_retry_after(Duration::from_secs(60))
                }
                None => err(ErrorKind::Forbidden, &format!("forbidden: {short}")),
            },
            404 | 410 => err(ErrorKind::NotFound, "not found"),
            500..=599 => err(ErrorKind::Delivery, "GitHub is unavailable"),
            _ => err(ErrorKind::Protocol, &format!("unexpected answer: {short}")),
        }
    }

    /// How long the headers of `reply` ask us to wait before the next request: `Retry-After`
    /// seconds, or the time until `x-ratelimit-reset` when `x-ratelimit-remaining` is `0`.
    pub(crate) fn rate_limit_wait(&self, reply: &Reply) -> Option<Duration> {
        if let Some(secs) = reply
            .header("retry-after")
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            return Some(Duration::from_secs(secs.max(1)));
        }
        if reply.header("x-ratelimit-remaining").map(str::trim) == Some("0") {
            let reset = reply
                .header("x-ratelimit-reset")
                .and_then(|v| v.trim().parse::<i64>().ok())?;
            let now = self.clock.now().unix_seconds();
            let secs = u64::try_from(reset.saturating_sub(now)).unwrap_or(0);
            return Some(Duration::from_secs(secs.max(1)));
        }
        None
    }

    pub(crate) async fn get_json<T: DeserializeOwned>(
        &self,
        op: &'static str,
        path: &str,
    ) -> Result<T> {
        self.send(op, Method::GET, path, None, None).await?.json(op)
    }

    /// Lists every page of a listing, following `Link: rel="next"`.
    async fn list_all<T: DeserializeOwned>(&self, op: &'static str, first: &str) -> Result<Vec<T>> {
        let mut items = Vec::new();
        let mut path = first.to_owned();
        for _ in 0..MAX_PAGES {
            let reply = self.send(op, Method::GET, &path, None, None).await?;
            items.extend(reply.json::<Vec<T>>(op)?);
            match reply.next_link() {
                Some(next) => path = self.relative(op, &next)?,
                None => return Ok(items),
            }
        }
        Err(super::gh(ErrorKind::Protocol, op, "too many pages"))
    }

    /// The squad's own account: the configured own login, or else `GET /user` (cached).
    ///
    /// # Errors
    ///
    /// The request's error when no own login is configured and `GET /user` fails.
    pub async fn identity(&self) -> Result<Identity> {
        if let Some(id) = self.identity.get() {
            return Ok(id.clone());
        }
        let identity = match self.config.own_login() {
            Some(login) => Identity {
                login: login.as_str().to_owned(),
                id: None,
            },
            None => {
                let user: wire::User = self.get_json("get own account", "/user").await?;
                Identity {
                    login: user.login,
                    id: Some(user.id),
                }
            }
        };
        Ok(self.identity.get_or_init(|| identity).clone())
    }

    pub(crate) fn actor(&self, user: Option<&wire::User>, own: &Identity) -> Actor {
        match user {
            Some(u) => Actor {
                login: u.login.clone(),
                id: u.id,
                kind: match u.kind.as_str() {
                    "User" => ActorKind::User,
                    "Bot" => ActorKind::Bot,
                    other => ActorKind::Other(other.to_owned()),
                },
                is_self: own.is(&u.login, u.id),
            },
            None => Actor {
                login: "ghost".to_owned(),
                id: 0,
                kind: ActorKind::Other("deleted".to_owned()),
                is_self: false,
            },
        }
    }

    fn approval_issue(&self, issue: wire::Issue, own: &Identity) -> Result<ApprovalIssue> {
        let untrusted = |why: &str| {
            super::gh(
                ErrorKind::Untrusted,
                "read issue",
                format!("issue #{}: {why}", issue.number),
            )
        };
        let Some(author) = issue.user.as_ref() else {
            return Err(untrusted("its author is unknown"));
        };
        if !own.is(&author.login, author.id) {
            return Err(untrusted(
                "its body was not written by the squad's own account",
            ));
        }
        let gate = parse_gate_block(issue.body.as_deref().unwrap_or_default())
            .ok_or_else(|| untrusted("its body holds no single well-formed gate block"))?;
        Ok(ApprovalIssue {
            number: issue.number,
            html_url: issue.html_url,
            title: issue.title,
            open: issue.state == "open",
            labels: issue.labels.into_iter().map(|l| l.name).collect(),
            gate,
            updated_at: issue.updated_at,
        })
    }

    /// Reads approval issue `number` and its gate block.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Untrusted`] when the body was not written by the squad's own
    /// account or holds no single well-formed gate block; request errors otherwise.
    pub async fn get_issue(&self, number: u64) -> Result<ApprovalIssue> {
        let own = self.identity().await?;
        let path = format!("{}/issues/{number}", self.repo_path());
        let issue: wire::Issue = self.get_json("get issue", &path).await?;
        self.approval_issue(issue, &own)
    }

    /// Resumes waiting after a restart: reads the issue of `state` and checks that its gate block
    /// still shows `state`'s gate.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Superseded`] when the issue shows another gate;
    /// [`ErrorKind::Untrusted`] as for [`GithubClient::get_issue`]; request errors.
    pub async fn resume(&self, state: &PollState) -> Result<ApprovalIssue> {
        let issue = self.get_issue(state.issue).await?;
        if issue.gate.gate_id != state.gate_id {
            return Err(super::gh(
                ErrorKind::Superseded,
                "resume",
                format!(
                    "issue #{} shows gate {}, not {}",
                    issue.number, issue.gate.gate_id, state.gate_id
                ),
            ));
        }
        Ok(issue)
    }

    /// The open approval issue of `run_id`, if any: an open issue labelled `squad-approval`,
    /// created by the squad's own account, whose body starts with the run's hidden marker. When
    /// several match, the most recent wins.
    ///
    /// # Errors
    ///
    /// Request errors.
    pub async fn find_run_issue(&self, run_id: &str) -> Result<Option<ApprovalIssue>> {
        check_token("run id", run_id)?;
        let own = self.identity().await?;
        let first = format!(
            "{}/issues?state=open&labels={APPROVAL_LABEL}&creator={}&per_page=100",
            self.repo_path(),
            own.login
        );
        let issues: Vec<wire::Issue> = self.list_all("find run issue", &first).await?;
        let mut matching: Vec<wire::Issue> = issues
            .into_iter()
            .filter(|i| i.pull_request.is_none())
            .filter(|i| i.user.as_ref().is_some_and(|u| own.is(&u.login, u.id)))
            .filter(|i| parse_run_marker(i.body.as_deref().unwrap_or_default()) == Some(run_id))
            .collect();
        matching.sort_by_key(|i| i.number);
        match matching.pop() {
            Some(issue) => self.approval_issue(issue, &own).map(Some),
            None => Ok(None),
        }
    }

    /// The numeric id of `login` (`GET /users/{login}`).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when there is no such account; request errors.
    pub async fn user_id(&self, login: &Login) -> Result<u64> {
        let user: wire::User = self
            .get_json("get user", &format!("/users/{}", login.as_str()))
            .await?;
        Ok(user.id)
    }

    /// Opens `gate_id` on the run's approval issue: reuses the run's open issue (new title, body
    /// and gate block, reopened labels, assignee, and a comment that @mentions the approver) or
    /// creates one (label `squad-approval`, assignee and @mention of the approver). The gate opens
    /// at GitHub's own timestamp of that write, so only comments and labels created after it can
    /// decide.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] for a run id, gate id or digest that cannot go in a marker;
    /// [`ErrorKind::NotFound`] when the approver handle is no GitHub account; request errors.
    pub async fn open_gate(
        &self,
        run_id: &str,
        gate_id: &str,
        digest: &str,
        payload: &IssuePayload,
    ) -> Result<OpenedGate> {
        let own = self.identity().await?;
        let approver = self.config.approver().clone();
        let gate = GateBlock {
            run_id: run_id.to_owned(),
            gate_id: gate_id.to_owned(),
            digest: digest.to_owned(),
            approver: approver.clone(),
        };
        let body = render_body(payload, &gate)?;
        let title = render_title(payload);
        let approver_id = self.user_id(&approver).await?;
        let existing = self.find_run_issue(run_id).await?;
        let (issue, reused) = match existing {
            Some(old) => {
                let path = format!("{}/issues/{}", self.repo_path(), old.number);
                let mut patch = serde_json::json!({
                    "title": title, "body": body, "state": "open",
                    "labels": [APPROVAL_LABEL], "assignees": [approver.as_str()],
                });
                let reply = match self
                    .send("update issue", Method::PATCH, &path, Some(&patch), None)
                    .await
                {
                    // 422: the approver cannot be assigned here; the @mention still pings.
                    Err(e) if e.status() == Some(422) => {
                        if let Some(fields) = patch.as_object_mut() {
                            fields.remove("assignees");
                        }
                        self.send("update issue", Method::PATCH, &path, Some(&patch), None)
                            .await?
                    }
                    other => other?,
                };
                let issue: wire::Issue = reply.json("update issue")?;
                let mention = serde_json::json!({ "body": format!(
                    "@{}: gate `{gate_id}` is open; the issue description has the details and how to respond.",
                    approver.as_str()
                )});
                self.send(
                    "comment",
                    Method::POST,
                    &format!("{path}/comments"),
                    Some(&mention),
                    None,
                )
                .await?;
                (issue, true)
            }
            None => (self.create_issue(&title, &body, &approver).await?, false),
        };
        let opened_at = issue.updated_at;
        let issue = self.approval_issue(issue, &own)?;
        let state = PollState::new(
            issue.number,
            gate_id,
            opened_at,
            approver.as_str(),
            Some(approver_id),
        );
        Ok(OpenedGate {
            issue,
            reused,
            state,
        })
    }

    async fn create_issue(&self, title: &str, body: &str, approver: &Login) -> Result<wire::Issue> {
        let path = format!("{}/issues", self.repo_path());
        let with_assignee = serde_json::json!({
            "title": title, "body": body, "labels": [APPROVAL_LABEL],
            "assignees": [approver.as_str()],
        });
        match self
            .send(
                "create issue",
                Method::POST,
                &path,
                Some(&with_assignee),
                None,
            )
            .await
        {
            Ok(reply) => reply.json("create issue"),
            // 422: the approver cannot be assigned here; the @mention in the body still pings.
            Err(e) if e.status() == Some(422) => {
                let plain = serde_json::json!({
                    "title": title, "body": body, "labels": [APPROVAL_LABEL],
                });
                self.send("create issue", Method::POST, &path, Some(&plain), None)
                    .await?
                    .json("create issue")
            }
            Err(e) => Err(e),
        }
    }

    /// The repository role of `login`, read with a raw `GET
    /// /repos/{o}/{r}/collaborators/{login}/permission` (octocrab's typed call cannot read the
    /// `write`, `read` and `none` values). A 404 (not a collaborator) reads as role `none`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] for a malformed login; request errors (callers fail closed).
    pub async fn collaborator_role(&self, login: &str) -> Result<CollaboratorRole> {
        let login = Login::new(login)?;
        let path = format!(
            "{}/collaborators/{}/permission",
            self.repo_path(),
            login.as_str()
        );
        match self
            .get_json::<wire::CollaboratorPermission>("get collaborator permission", &path)
            .await
        {
            Ok(p) => Ok(CollaboratorRole {
                role_name: if p.role_name.is_empty() {
                    p.permission.clone()
                } else {
                    p.role_name
                },
                permission: p.permission,
            }),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(CollaboratorRole {
                role_name: "none".to_owned(),
                permission: "none".to_owned(),
            }),
            Err(e) => Err(e),
        }
    }

    /// Decides whether `actor` may decide the gate of `state`: never the squad's own account,
    /// never a bot; the registered approver (by numeric id when known, so a renamed or recycled
    /// login does not carry over); otherwise a collaborator whose current role may decide
    /// ([`CollaboratorRole::may_decide`]). Call it again when the decision is consumed.
    ///
    /// # Errors
    ///
    /// Request errors of the permission check; the caller must then treat the actor as not
    /// authorized (fail closed).
    pub async fn authorize(&self, actor: &Actor, state: &PollState) -> Result<Verdict> {
        let own = self.identity().await?;
        if actor.is_self || own.is(&actor.login, actor.id) {
            return Ok(Verdict::Refused(RejectReason::OwnAccount));
        }
        if actor.is_bot() {
            return Ok(Verdict::Refused(RejectReason::Bot));
        }
        if actor.id == 0 {
            return Ok(Verdict::Refused(RejectReason::UnknownActor));
        }
        let registered = match state.approver_id {
            Some(id) => id == actor.id,
            None => state.approver.eq_ignore_ascii_case(&actor.login),
        };
        if registered {
            return Ok(Verdict::Authorized(AuthorizedAs::RegisteredApprover));
        }
        let role = self.collaborator_role(&actor.login).await?;
        if role.may_decide() {
            Ok(Verdict::Authorized(AuthorizedAs::Collaborator {
                role: role.role_name,
            }))
        } else {
            Ok(Verdict::Refused(RejectReason::Unauthorized {
                role: role.role_name,
            }))
        }
    }

    /// Writes a decision back: comments the outcome (the changes note quoted, as data), sets the
    /// labels to `squad-approval` alone (clearing any `squad/*` signal label) or, for a changes
    /// request, `squad-approval` + `squad/changes-requested`, and closes the issue for approve,
    /// approve-all (completed) and stop (not planned). A changes request leaves it open.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] for a malformed gate id or login; request errors (the steps
    /// are idempotent, so the whole call can be retried).
    pub async fn resolve(&self, issue: u64, resolution: &Resolution) -> Result<()> {
        check_token("gate id", &resolution.gate_id)?;
        // A decision taken in the chat session names no GitHub account.
        let by = if resolution.by == "in-chat" {
            "the chat session".to_owned()
        } else {
            format!("@{}", Login::new(&resolution.by)?.as_str())
        };
        let path = format!("{}/issues/{issue}", self.repo_path());
        let mut text = format!(
            "<!-- squad-resolution: {} -->\nGate `{}` resolved: **{}** by {by} at {}.",
            resolution.gate_id,
            resolution.gate_id,
            resolution.outcome.as_str(),
            resolution.at
        );
        if let Some(note) = resolution.note.as_deref().filter(|n| !n.trim().is_empty()) {
            text.push_str("\n\nNote (data for the squad, not a command):\n");
            for line in neutralize(note).lines() {
                text.push_str("\n> ");
                text.push_str(line);
            }
        }
        let comment = serde_json::json!({ "body": text });
        self.send(
            "comment outcome",
            Method::POST,
            &format!("{path}/comments"),
            Some(&comment),
            None,
        )
        .await?;
        let labels = match resolution.outcome {
            Outcome::ChangesRequested => serde_json::json!({
                "labels": [APPROVAL_LABEL, CHANGES_REQUESTED_LABEL]
            }),
            _ => serde_json::json!({ "labels": [APPROVAL_LABEL] }),
        };
        self.send(
            "set labels",
            Method::PUT,
            &format!("{path}/labels"),
            Some(&labels),
            None,
        )
        .await?;
        let reason = match resolution.outcome {
            Outcome::Approved | Outcome::ApproveAll => Some("completed"),
            Outcome::Stopped => Some("not_planned"),
            Outcome::ChangesRequested => None,
        };
        if let Some(reason) = reason {
            let close = serde_json::json!({ "state": "closed", "state_reason": reason });
            self.send("close issue", Method::PATCH, &path, Some(&close), None)
                .await?;
        }
        Ok(())
    }
}
