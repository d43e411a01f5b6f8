//! The shapes of GitHub's REST answers that this layer reads (private; only the fields we use).

use serde::Deserialize;
use squad_model::Timestamp;

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct User {
    pub(crate) login: String,
    pub(crate) id: u64,
    #[serde(rename = "type", default)]
    pub(crate) kind: String,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Label {
    pub(crate) name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Issue {
    pub(crate) number: u64,
    pub(crate) html_url: String,
    pub(crate) state: String,
    pub(crate) title: String,
    #[serde(default)]
    pub(crate) body: Option<String>,
    pub(crate) user: Option<User>,
    #[serde(default)]
    pub(crate) labels: Vec<Label>,
    #[serde(default)]
    pub(crate) pull_request: Option<serde_json::Value>,
    pub(crate) updated_at: Timestamp,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Comment {
    pub(crate) id: u64,
    #[serde(default)]
    pub(crate) body: Option<String>,
    pub(crate) user: Option<User>,
    pub(crate) created_at: Timestamp,
    pub(crate) updated_at: Timestamp,
    #[serde(default)]
    pub(crate) author_association: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct IssueEvent {
    pub(crate) id: u64,
    pub(crate) event: String,
    pub(crate) actor: Option<User>,
    #[serde(default)]
    pub(crate) label: Option<Label>,
    pub(crate) created_at: Timestamp,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct CollaboratorPermission {
    #[serde(default)]
    pub(crate) permission: String,
    #[serde(default)]
    pub(crate) role_name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ErrorBody {
    #[serde(default)]
    pub(crate) message: String,
}
