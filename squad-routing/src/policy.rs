//! [`RoutingPolicy`]: the choices where the rules admit variants.

use serde::{Deserialize, Serialize};

/// Policy choices, so that researchers can replay one trace under several variants.
///
/// The defaults are the project's decisions (routing reference, "Decisions"):
///
/// | Field | Default | Meaning |
/// |---|---|---|
/// | `cancel_tasks_on_reassign` | `true` | decision (a): an assignee change cancels every active task on the issue first; `false` is multica Era C |
/// | `cancel_tasks_on_issue_cancelled` | `false` | the open point: Era C keeps tasks when an issue is set to `cancelled`; `true` is Eras A/B |
/// | `escalation_seconds` | `300` | delay of the escalation fallback when a member answers an agent's comment |
/// | `autopilot_dedup_seconds` | `60` | decision (g): window in which `create_issue` skips a same-titled open issue |
///
/// ```
/// use squad_routing::RoutingPolicy;
///
/// let era_c = RoutingPolicy { cancel_tasks_on_reassign: false, ..RoutingPolicy::default() };
/// assert!(RoutingPolicy::default().cancel_tasks_on_reassign);
/// assert!(!era_c.cancel_tasks_on_reassign);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RoutingPolicy {
    /// Cancel every active task on an issue when its assignee changes (decision (a)).
    pub cancel_tasks_on_reassign: bool,
    /// Cancel every active task on an issue when its status becomes `cancelled`.
    pub cancel_tasks_on_issue_cancelled: bool,
    /// Delay, in seconds, of the escalation task for the assignee (cascade row 5).
    pub escalation_seconds: u32,
    /// Window, in seconds, of the autopilot `create_issue` duplicate check (decision (g)).
    pub autopilot_dedup_seconds: u32,
}

impl Default for RoutingPolicy {
    fn default() -> Self {
        Self {
            cancel_tasks_on_reassign: true,
            cancel_tasks_on_issue_cancelled: false,
            escalation_seconds: 300,
            autopilot_dedup_seconds: 60,
        }
    }
}
