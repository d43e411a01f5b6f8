//! Channels built from the `notify` settings and the environment, as every front end needs them
//! (the `squad` CLI, an MCP server): the configured channel when it can work here, in-chat
//! always, and a note for each channel that degrades to in-chat.

use std::sync::Arc;

use squad_model::{ChannelKind, NotifySettings};

use crate::auth::{ApproverRules, Authorizer, Identity, StaticAuthorizer};
use crate::channel::{ApprovalChannel, FanOut, InChatChannel};
use crate::clock::Clock;
use crate::error::Result;
use crate::gate::Gate;

/// The channels to notify a new gate through.
#[derive(Debug)]
pub struct NotifyChannels {
    /// The configured channel when it can work here, then in-chat.
    pub channels: FanOut,
    /// Why a configured channel degrades to in-chat, one sentence each (to tell the human).
    pub notes: Vec<String>,
}

/// The channels, rules and authorizer to wait on a gate with ([`crate::Waiter::new`]).
#[derive(Debug)]
pub struct WaitChannels {
    /// The gate's approval issue when it was opened on GitHub and a token is set here, then
    /// in-chat.
    pub channels: FanOut,
    /// Who may decide: the approver of the gate's issue and the squad's own account, else the
    /// handle of `notify.github`.
    pub rules: ApproverRules,
    /// The repository roles: the GitHub channel, else a table with nobody in it.
    pub authorizer: Arc<dyn Authorizer>,
    /// The approval issue's number, when the gate has one here.
    pub issue: Option<u64>,
    /// Why the gate's remote channel cannot be polled here, one sentence each.
    pub notes: Vec<String>,
}

#[cfg(feature = "github")]
fn github(
    settings: &NotifySettings,
    clock: &Arc<dyn Clock>,
    notes: &mut Vec<String>,
) -> Option<Arc<crate::github::GithubIssueChannel>> {
    match crate::github::GithubIssueChannel::from_env(settings, clock.clone()) {
        Ok(c) => Some(Arc::new(c)),
        Err(e) => {
            notes.push(format!("the github-issue channel degrades to in-chat: {e}"));
            None
        }
    }
}

/// The channels for a new gate: the channel `settings` configure when it can work here
/// (`SQUAD_WEBHOOK_URL` set; `GITHUB_TOKEN` or `GH_TOKEN` set), then `chat`. Call it inside a
/// tokio runtime when the github-issue channel may be built.
pub fn notify_channels(
    settings: Option<&NotifySettings>,
    chat: Arc<InChatChannel>,
    clock: Arc<dyn Clock>,
) -> NotifyChannels {
    let mut notes = Vec::new();
    let _ = &clock;
    let remote: Option<Arc<dyn ApprovalChannel>> = match settings.map(|s| (s, s.approval_channel)) {
        #[cfg(feature = "webhook")]
        Some((_, ChannelKind::Webhook)) => {
            use crate::webhook::{WebhookChannel, WebhookConfig};
            match WebhookChannel::from_env(WebhookConfig::from_env(), clock) {
                Ok(w) if w.is_configured() => Some(Arc::new(w)),
                Ok(_) => {
                    notes.push(
                        "the webhook channel degrades to in-chat: SQUAD_WEBHOOK_URL is not set"
                            .into(),
                    );
                    None
                }
                Err(e) => {
                    notes.push(format!("the webhook channel degrades to in-chat: {e}"));
                    None
                }
            }
        }
        #[cfg(feature = "github")]
        Some((s, ChannelKind::GithubIssue)) => {
            github(s, &clock, &mut notes).map(|gh| -> Arc<dyn ApprovalChannel> { gh })
        }
        Some((_, kind)) if kind != ChannelKind::InChat => {
            notes.push(format!(
                "the {kind} channel degrades to in-chat: it is not built into this program"
            ));
            None
        }
        _ => None,
    };
    NotifyChannels {
        channels: remote
            .into_iter()
            .fold(FanOut::new(), FanOut::with)
            .with(chat),
        notes,
    }
}

/// The channels to wait on `gate` with: its GitHub approval issue when it has one and a token
/// is set here (with that issue's approver and the squad's own account as rules, and the
/// channel as authorizer), then `chat`.
///
/// # Errors
///
/// The GitHub channel's errors when the squad's own account cannot be read.
pub async fn wait_channels(
    gate: &Gate,
    settings: Option<&NotifySettings>,
    chat: Arc<InChatChannel>,
    clock: Arc<dyn Clock>,
) -> Result<WaitChannels> {
    let mut notes = Vec::new();
    let on_github = gate
        .deliveries
        .iter()
        .any(|d| d.channel == ChannelKind::GithubIssue);
    let mut out = WaitChannels {
        channels: FanOut::new(),
        rules: ApproverRules {
            approver: settings
                .and_then(|n| n.github.as_ref())
                .map(|g| Identity::login(&g.handle)),
            own_identities: Vec::new(),
        },
        authorizer: Arc::new(StaticAuthorizer::new()),
        issue: None,
        notes: Vec::new(),
    };
    #[cfg(feature = "github")]
    if let Some(s) =
        settings.filter(|s| on_github && s.approval_channel == ChannelKind::GithubIssue)
        && let Some(gh) = github(s, &clock, &mut notes)
    {
        out.rules = gh.approver_rules(gate).await?;
        out.issue = gh.issue_number(gate);
        out.authorizer = gh.clone();
        out.channels = out.channels.with(gh);
    }
    #[cfg(not(feature = "github"))]
    if on_github {
        notes.push(
            "the github-issue channel is not built into this program; answer in-chat".to_owned(),
        );
    }
    let _ = clock;
    out.channels = out.channels.with(chat);
    out.notes = notes;
    Ok(out)
}
