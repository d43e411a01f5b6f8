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
/// | `leader_barrier_seconds` | `0` (off) | the leader barrier: see below |
/// | `reply_falls_back_to_assignee` | `true` | a member's reply to a member's comment that no thread rule routes goes to the assignee (cascade row 7); `false` is multica's later rule (MUL-5958): such a reply wakes nobody |
///
/// # Policy variants
///
/// Two options are variants worth comparing with `squad route simulate` (multica's users asked
/// for both); their defaults keep the reference's behaviour.
///
/// **Leader barrier** (`leader_barrier_seconds: n`, `n > 0`). Without it, every report a member
/// agent posts on a squad-assigned parent (an agent's plain comment, cascade row 4) wakes the
/// leader at once, unless a queued or dispatched leader task absorbs it: when N members report
/// one after the other while the leader works, the leader is woken up to N times. With it, the
/// first report creates a *deferred* leader task due `n` seconds later (the decision carries
/// `delay_seconds: n` and rule `leader_barrier`), and every further report on that parent within
/// those `n` seconds is merged into it (a `coalesce` with rule `leader_barrier`): the leader
/// wakes once, when the host's scheduler makes the task due, with all the reports. A queued or
/// dispatched leader task still absorbs a report at once, as without the barrier; the leader's
/// own comments, humans' comments, mentions, escalations and child-done wakes are not held. The
/// cost is latency: the first report waits up to `n` seconds.
///
/// **No assignee fallback for replies to members** (`reply_falls_back_to_assignee: false`).
/// By default (Era C), a member's reply whose direct parent is a member's comment, in a thread
/// whose root is an agent's or the system's (so that rows 5 and 6 do not route it), falls
/// through to row 7 and wakes the issue's agent or squad leader. With `false`, it wakes nobody
/// (a no-op `no_trigger` with rule `comment_reply_no_fallback`): people talking to each other in
/// a thread do not wake the assignee. Explicit mentions, replies to agents (row 5), member
/// threads (row 6) and top-level comments (row 7) are unchanged.
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
    /// The leader barrier's window in seconds: members' reports on one parent within it wake
    /// the leader once (see "Policy variants"); `0` turns the barrier off.
    pub leader_barrier_seconds: u32,
    /// Whether a member's reply to a member's comment that no thread rule routes falls back to
    /// the assignee (cascade row 7); see "Policy variants".
    pub reply_falls_back_to_assignee: bool,
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
            leader_barrier_seconds: 0,
            reply_falls_back_to_assignee: true,
        }
    }
}
