//! The `notify` object of `state.json`: how the squad asks a human for approval.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The approval channel in use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChannelKind {
    /// A GitHub issue, answerable from a phone.
    GithubIssue,
    /// An outbound webhook ping (the decision still arrives in-chat or on GitHub).
    Webhook,
    /// The chat session itself (the default).
    #[default]
    InChat,
}

impl ChannelKind {
    /// The wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            ChannelKind::GithubIssue => "github-issue",
            ChannelKind::Webhook => "webhook",
            ChannelKind::InChat => "in-chat",
        }
    }
}

impl fmt::Display for ChannelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ChannelKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        [
            ChannelKind::GithubIssue,
            ChannelKind::Webhook,
            ChannelKind::InChat,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
        .ok_or_else(|| Error::Json {
            what: "approval channel",
            message: format!("unknown channel {s:?}: expected github-issue, webhook or in-chat"),
        })
    }
}

/// Where approval issues go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GithubTarget {
    /// The login to assign and @mention.
    pub handle: String,
    /// `owner/repo` hosting the approval issues.
    pub repo: String,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `notify` object of `state.json` (replace semantics, no secrets).
///
/// ```
/// use squad_model::NotifySettings;
///
/// let n = NotifySettings::from_value(serde_json::json!({
///     "approvalChannel": "github-issue", "enabled": true, "email": "",
///     "github": {"handle": "octocat", "repo": "owner/repo"}, "future": 1
/// }))?;
/// assert_eq!(n.approval_channel.as_str(), "github-issue");
/// assert_eq!(n.to_value()["future"], 1); // unknown keys survive
/// # Ok::<(), squad_model::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotifySettings {
    /// The active channel.
    pub approval_channel: ChannelKind,
    /// `true` when a channel beyond plain in-chat is configured.
    pub enabled: bool,
    /// Courtesy notifier address, `""` when none. Never an approval path.
    #[serde(default)]
    pub email: String,
    /// GitHub target of the `github-issue` channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub github: Option<GithubTarget>,
    /// Watch Mode provenance, kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Value>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for NotifySettings {
    fn default() -> Self {
        Self {
            approval_channel: ChannelKind::InChat,
            enabled: false,
            email: String::new(),
            github: None,
            trigger: None,
            extra: Map::new(),
        }
    }
}

impl NotifySettings {
    /// Validates `value` against the notify-state schema, then converts it.
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] naming each field at fault.
    pub fn from_value(value: Value) -> Result<Self> {
        crate::schema::validate_notify(&value)?;
        serde_json::from_value(value).map_err(|e| Error::Json {
            what: "notify object",
            message: e.to_string(),
        })
    }

    /// The quorum of the github-issue channel: how many distinct authorized approvers must
    /// approve a gate (the `quorum` key, kept with the unknown keys; 1 when absent).
    ///
    /// ```
    /// use squad_model::NotifySettings;
    ///
    /// let mut n = NotifySettings::default();
    /// assert_eq!(n.quorum()?, 1);
    /// n.set_quorum(3);
    /// assert_eq!(n.to_value()["quorum"], 3);
    /// assert_eq!(n.quorum()?, 3);
    /// # Ok::<(), squad_model::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Json`] when `quorum` is not a whole number that fits in a `u32`.
    pub fn quorum(&self) -> Result<u32> {
        match self.extra.get("quorum") {
            None | Some(Value::Null) => Ok(1),
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| Error::Json {
                    what: "notify quorum",
                    message: format!("quorum must be a whole number, not {v}"),
                }),
        }
    }

    /// Sets the quorum (1, the default, removes the key).
    pub fn set_quorum(&mut self, n: u32) {
        if n == 1 {
            self.extra.remove("quorum");
        } else {
            self.extra.insert("quorum".to_owned(), Value::from(n));
        }
    }

    /// The object as JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
