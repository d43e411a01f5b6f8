//! The `github-issue` [`ApprovalChannel`]: [`GithubClient`] behind the crate's channel trait.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use squad_model::{ChannelKind, NotifySettings};

use super::body::IssuePayload;
use super::client::GithubClient;
use super::config::{GithubConfig, Token};
use super::poll::{Parsed, PollState, SignalParser};
use super::types::{Candidate, CandidateContent, Outcome, Rejection, Resolution, Verdict};
use crate::approvals::Ignored;
use crate::auth::{ApproverRules, Authorizer, Identity, Role};
use crate::channel::{ApprovalChannel, Capabilities, Delivery, Polled, Signal, SignalBody};
use crate::error::{Error, ErrorKind, Result};
use crate::gate::{Gate, GateState, Responder};
use crate::signal::{Command, parse_comment, parse_label};

/// The crate's Markdown-aware parser ([`parse_comment`], [`parse_label`]) as the GitHub layer's
/// [`SignalParser`]: a quoted, fenced or indented `/approve` is no command, and the gate id a
/// command names is passed on so that the layer can reject commands for another gate.
#[derive(Debug, Clone, Copy, Default)]
pub struct CommandParser;

impl SignalParser<Command> for CommandParser {
    fn parse(&self, content: &CandidateContent) -> Option<Parsed<Command>> {
        match content {
            CandidateContent::Comment(body) => parse_comment(body).command().map(|c| Parsed {
                signal: c.command.clone(),
                gate: c.gate.as_ref().map(|g| g.as_str().to_owned()),
            }),
            CandidateContent::Label(name) => {
                parse_label(name).map(|signal| Parsed { signal, gate: None })
            }
        }
    }
}

#[derive(Debug, Clone)]
struct Tracked {
    state: PollState,
    /// `resume` confirmed that the issue still shows this gate (or `notify` just opened it).
    confirmed: bool,
}

/// The `github-issue` approval channel.
///
/// - `notify` opens the run's approval issue or reuses it ([`GithubClient::open_gate`]); the
///   returned [`Delivery::locator`] is the serialized [`PollState`] (issue number, gate id, the
///   GitHub time the gate opened, the approver's numeric id, ETags). Stored with the pending gate
///   in `state.json`, it lets a fresh process resume on the same issue and gate.
/// - `poll` confirms once that the issue still shows the gate ([`GithubClient::resume`]), then
///   runs one [`GithubClient::step`] with [`CommandParser`]: comments and `labeled` events made
///   after the gate opened, unedited, by a human other than the squad, naming no other gate, by
///   the registered approver or a collaborator with write access. A decision is checked again
///   ([`GithubClient::recheck`]: still there, unedited, still authorized) before it is returned
///   as a [`Signal`]; the host's [`crate::Approvals::consume`] then parses and authorizes it once
///   more (with this channel as the [`Authorizer`]). Refused commands come back in
///   [`Polled::ignored`], to be logged.
/// - `resolve` comments the outcome and closes the issue (approve, approve-all: completed; stop:
///   not planned) or relabels it `squad/changes-requested` (changes).
///
/// A poll that advanced the poll state returns it in [`Polled::locators`], for the host to store
/// ([`crate::Approvals::update_locator`]; [`crate::Waiter`] does), so that a restart keeps the
/// ETags. GitHub's `x-poll-interval` comes back in [`Polled::next_poll_after`], a rate limit as
/// an [`ErrorKind::RateLimited`] error with [`Error::retry_after`].
pub struct GithubIssueChannel {
    client: GithubClient,
    clock: Arc<dyn crate::Clock>,
    tracked: Mutex<HashMap<String, Tracked>>,
}

impl fmt::Debug for GithubIssueChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GithubIssueChannel")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

fn responder(c: &Candidate) -> Responder {
    Responder {
        login: c.actor.login.clone(),
        id: Some(c.actor.id),
        bot: c.actor.is_bot(),
    }
}

impl GithubIssueChannel {
    /// A channel over `client`; `clock` stamps the signals (when the channel saw them).
    pub fn new(client: GithubClient, clock: Arc<dyn crate::Clock>) -> Self {
        Self {
            client,
            clock,
            tracked: Mutex::new(HashMap::new()),
        }
    }

    /// A channel for the `notify.github` settings, with the token from `GITHUB_TOKEN` or
    /// `GH_TOKEN` and the API base from `GITHUB_API_URL` (default `https://api.github.com`).
    /// The client reads time from `clock` too. Call it inside a tokio runtime.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Unavailable`] when no token is set or `notify.github` is missing (degrade to
    /// in-chat); [`ErrorKind::InvalidInput`] for a malformed repository, handle or API URL.
    pub fn from_env(settings: &NotifySettings, clock: Arc<dyn crate::Clock>) -> Result<Self> {
        let Some(target) = settings.github.as_ref() else {
            return Err(Error::new(
                ErrorKind::Unavailable,
                "github.configure",
                "notify.github (handle and repo) is not configured",
            ));
        };
        let config = GithubConfig::from_env(&target.repo, &target.handle)?;
        let token = Token::from_env()?;
        let client = GithubClient::new(config, token)?.with_clock(clock.clone());
        Ok(Self::new(client, clock))
    }

    /// The GitHub client.
    pub fn client(&self) -> &GithubClient {
        &self.client
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Tracked>> {
        self.tracked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The poll state of `gate`: the one in memory, else the one stored with the gate's
    /// github-issue delivery.
    fn tracked(&self, gate: &Gate) -> Result<Tracked> {
        if let Some(t) = self.lock().get(gate.id.as_str()) {
            return Ok(t.clone());
        }
        let stored = gate
            .deliveries
            .iter()
            .rev()
            .find(|d| d.channel == ChannelKind::GithubIssue)
            .and_then(|d| d.locator.as_deref())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NotFound,
                    "github.poll",
                    format!(
                        "gate {} has no approval issue recorded in state.json",
                        gate.id
                    ),
                )
            })?;
        let state: PollState = serde_json::from_str(stored).map_err(|e| {
            Error::new(
                ErrorKind::Corrupt,
                "github.poll",
                format!(
                    "the stored GitHub poll state of gate {} is unreadable: {e}",
                    gate.id
                ),
            )
        })?;
        if state.gate_id != gate.id.as_str() {
            return Err(Error::new(
                ErrorKind::Corrupt,
                "github.poll",
                format!(
                    "the stored GitHub poll state is for gate {}, not {}",
                    state.gate_id, gate.id
                ),
            ));
        }
        Ok(Tracked {
            state,
            confirmed: false,
        })
    }

    fn store(&self, gate: &Gate, t: Tracked) {
        self.lock().insert(gate.id.as_str().to_owned(), t);
    }

    /// The approval issue number of `gate`, when known.
    pub fn issue_number(&self, gate: &Gate) -> Option<u64> {
        self.tracked(gate).ok().map(|t| t.state.issue)
    }

    /// The rules [`crate::Approvals::consume`] should apply to this channel's signals: the
    /// registered approver (login and numeric id from the poll state) and the squad's own
    /// account (never an approver).
    ///
    /// # Errors
    ///
    /// As [`GithubClient::identity`], and as `poll` when the gate has no stored poll state.
    pub async fn approver_rules(&self, gate: &Gate) -> Result<ApproverRules> {
        let t = self.tracked(gate)?;
        let own = self.client.identity().await?;
        Ok(ApproverRules {
            approver: Some(Identity {
                login: t.state.approver.clone(),
                id: t.state.approver_id,
            }),
            own_identities: vec![Identity {
                login: own.login,
                id: own.id,
            }],
        })
    }

    fn ignored(&self, r: &Rejection, reason: String) -> Ignored {
        Ignored {
            signal: self.signal(&r.candidate),
            reason,
        }
    }

    fn signal(&self, c: &Candidate) -> Signal {
        Signal {
            responder: responder(c),
            at: self.clock.now(),
            source: ChannelKind::GithubIssue,
            body: match &c.content {
                CandidateContent::Comment(b) => SignalBody::Text(b.clone()),
                CandidateContent::Label(l) => SignalBody::Label(l.clone()),
            },
            reference: Some(c.source.to_string()),
        }
    }
}

#[async_trait::async_trait]
impl ApprovalChannel for GithubIssueChannel {
    fn kind(&self) -> ChannelKind {
        ChannelKind::GithubIssue
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            outbound: true,
            inbound: true,
        }
    }

    async fn notify(&self, gate: &Gate) -> Result<Delivery> {
        let payload = IssuePayload {
            mode: gate.mode.as_str().to_owned(),
            trigger: gate.trigger.as_str().to_owned(),
            topic: gate.topic.clone(),
            awaiting: gate.awaiting.clone(),
            detail: gate.detail.clone(),
        };
        let opened = self
            .client
            .open_gate(gate.run.as_str(), gate.id.as_str(), &gate.digest, &payload)
            .await?;
        let locator = serde_json::to_string(&opened.state).map_err(|e| {
            Error::new(
                ErrorKind::Corrupt,
                "github.notify",
                format!("cannot encode the poll state: {e}"),
            )
        })?;
        let repo = self.client.config().repo();
        let approval_ref = format!(
            "#{} {}/{}{}",
            opened.issue.number,
            repo.owner(),
            repo.name(),
            if opened.reused { " (reused)" } else { "" }
        );
        self.store(
            gate,
            Tracked {
                state: opened.state,
                confirmed: true,
            },
        );
        Ok(Delivery {
            channel: ChannelKind::GithubIssue,
            approval_ref,
            delivery_id: None,
            locator: Some(locator),
            attempts: 1,
        })
    }

    async fn poll(&self, gate: &Gate) -> Result<Polled> {
        let mut t = self.tracked(gate)?;
        if !t.confirmed {
            self.client.resume(&t.state).await?;
            t.confirmed = true;
            self.store(gate, t.clone());
        }
        let before = t.state.clone();
        let step = self.client.step(&mut t.state, &CommandParser).await?;
        let mut ignored: Vec<Ignored> = step
            .rejected
            .iter()
            // Plain discussion and the squad's own mentions are not worth a log entry.
            .filter(|r| CommandParser.parse(&r.candidate.content).is_some())
            .map(|r| self.ignored(r, r.reason.to_string()))
            .collect();
        let mut signals = Vec::new();
        for decision in step.decision.into_iter().chain(step.more) {
            match self.client.recheck(&t.state, &decision.candidate).await? {
                Verdict::Authorized(_) => signals.push(self.signal(&decision.candidate)),
                Verdict::Refused(reason) => ignored.push(Ignored {
                    signal: self.signal(&decision.candidate),
                    reason: format!("refused when consumed: {reason}"),
                }),
            }
        }
        // A failed recheck returned above: the state is not advanced, so the next poll sees the
        // candidate again.
        let mut locators = Vec::new();
        if t.state != before
            && let Ok(locator) = serde_json::to_string(&t.state)
        {
            locators.push((ChannelKind::GithubIssue, locator));
        }
        self.store(gate, t);
        Ok(Polled {
            signals,
            exhausted: false,
            ignored,
            locators,
            next_poll_after: step.wait_hint,
        })
    }

    async fn resolve(&self, gate: &Gate) -> Result<Option<String>> {
        let outcome = match gate.state {
            GateState::Approved => Outcome::Approved,
            GateState::ApproveAll => Outcome::ApproveAll,
            GateState::ChangesRequested => Outcome::ChangesRequested,
            GateState::Stopped => Outcome::Stopped,
            GateState::Pending | GateState::Expired => return Ok(None),
        };
        let Some(decision) = gate.decision.as_ref().filter(|d| !d.pre_approved) else {
            return Ok(None);
        };
        let Ok(t) = self.tracked(gate) else {
            return Ok(None);
        };
        let by = decision
            .by
            .as_ref()
            .map_or_else(|| "in-chat".to_owned(), |r| r.login.clone());
        let resolution = Resolution {
            gate_id: gate.id.as_str().to_owned(),
            outcome,
            by,
            at: decision.at,
            note: decision.note.clone(),
        };
        self.client.resolve(t.state.issue, &resolution).await?;
        let repo = self.client.config().repo();
        let what = match outcome {
            Outcome::ChangesRequested => "commented and relabelled squad/changes-requested",
            Outcome::Stopped => "commented and closed (not planned)",
            _ => "commented and closed (completed)",
        };
        Ok(Some(format!(
            "issue #{} {}/{}: {what}",
            t.state.issue,
            repo.owner(),
            repo.name()
        )))
    }
}

#[async_trait::async_trait]
impl Authorizer for GithubIssueChannel {
    /// The repository role from `role_name` (a custom role counts as `write` when its legacy
    /// permission is `write` or `admin`, else as `read`).
    async fn role(&self, who: &Responder) -> Result<Role> {
        let r = self.client.collaborator_role(&who.login).await?;
        Ok(match r.role_name.as_str() {
            "admin" => Role::Admin,
            "maintain" => Role::Maintain,
            "write" => Role::Write,
            "triage" => Role::Triage,
            "read" => Role::Read,
            "none" => Role::None,
            _ if r.may_decide() => Role::Write,
            _ => Role::Read,
        })
    }
}
