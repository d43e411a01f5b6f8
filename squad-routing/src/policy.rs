//! [`RoutingPolicy`]: the choices where the rules admit variants.

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};

/// Policy choices, so that researchers can replay one trace under several variants.
///
/// The defaults are the project's decisions (routing reference, "Decisions"):
///
/// | Field | Default | Meaning |
/// |---|---|---|
/// | `cancel_tasks_on_reassign` | `true` | decision (a): an assignee change cancels every active task on the issue first; `false` is multica Era C |
/// | `cancel_tasks_on_issue_cancelled` | `false` | the open point: Era C keeps tasks when an issue is set to `cancelled`; `true` is Eras A/B |
/// | `escalation_seconds` | `300` | delay of the escalation fallback when a member answers an agent's comment; `0` disables the escalation (as multica does for a delay of 0 or less) |
/// | `autopilot_dedup_seconds` | `60` | decision (g): window in which `create_issue` skips a same-titled open issue |
/// | `max_attempts` | `3` | a failed task is retried until it has run this many attempts; `0` leaves retries to the host (no retry is decided) |
///
/// In a policy file (JSON), absent fields keep their defaults and unknown fields are refused, so
/// that a misspelt option is an error rather than a silent default:
///
/// ```
/// use squad_routing::RoutingPolicy;
///
/// let p: RoutingPolicy = serde_json::from_str(r#"{"max_attempts": 1}"#).unwrap();
/// assert_eq!(p, RoutingPolicy { max_attempts: 1, ..RoutingPolicy::default() });
/// let err = serde_json::from_str::<RoutingPolicy>(r#"{"cancel_task_on_reassign": false}"#);
/// assert!(err.unwrap_err().to_string().contains("unknown field `cancel_task_on_reassign`"));
/// ```
///
/// ```
/// use squad_routing::RoutingPolicy;
///
/// let era_c = RoutingPolicy { cancel_tasks_on_reassign: false, ..RoutingPolicy::default() };
/// assert!(RoutingPolicy::default().cancel_tasks_on_reassign);
/// assert!(!era_c.cancel_tasks_on_reassign);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoutingPolicy {
    /// Cancel every active task on an issue when its assignee changes (decision (a)).
    pub cancel_tasks_on_reassign: bool,
    /// Cancel every active task on an issue when its status becomes `cancelled`.
    pub cancel_tasks_on_issue_cancelled: bool,
    /// Delay, in seconds, of the escalation task for the assignee (cascade row 5); `0` means no
    /// escalation.
    pub escalation_seconds: u32,
    /// Window, in seconds, of the autopilot `create_issue` duplicate check (decision (g)).
    pub autopilot_dedup_seconds: u32,
    /// Attempts a task gets before a failure is final (retries, §1); `0`: the host retries.
    pub max_attempts: u32,
}

impl RoutingPolicy {
    /// Reads a policy file: one JSON object of the fields above. Absent fields keep their
    /// defaults; anything else (an unknown or misspelt field, a value of the wrong type, an
    /// array, a number) is refused.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidPolicy`] naming the problem.
    ///
    /// ```
    /// use squad_routing::{ErrorKind, RoutingPolicy};
    ///
    /// assert_eq!(RoutingPolicy::from_json("{}").unwrap(), RoutingPolicy::default());
    /// for bad in ["[]", "3", r#"{"max_attempts": -1}"#, r#"{"cancel_task_on_reassign": false}"#] {
    ///     assert_eq!(RoutingPolicy::from_json(bad).unwrap_err().kind(), ErrorKind::InvalidPolicy);
    /// }
    /// ```
    pub fn from_json(text: &str) -> Result<Self> {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| Error::new(ErrorKind::InvalidPolicy, format!("invalid JSON: {e}")))?;
        let kind = match &value {
            serde_json::Value::Object(_) => None,
            serde_json::Value::Array(_) => Some("an array"),
            serde_json::Value::String(_) => Some("a string"),
            serde_json::Value::Number(_) => Some("a number"),
            serde_json::Value::Bool(_) => Some("a boolean"),
            serde_json::Value::Null => Some("null"),
        };
        if let Some(kind) = kind {
            return Err(Error::new(
                ErrorKind::InvalidPolicy,
                format!("a policy must be a JSON object, not {kind}"),
            ));
        }
        serde_json::from_value(value)
            .map_err(|e| Error::new(ErrorKind::InvalidPolicy, e.to_string()))
    }
}

impl Default for RoutingPolicy {
    fn default() -> Self {
        Self {
            cancel_tasks_on_reassign: true,
            cancel_tasks_on_issue_cancelled: false,
            escalation_seconds: 300,
            autopilot_dedup_seconds: 60,
            max_attempts: 3,
        }
    }
}
