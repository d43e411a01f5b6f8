//! `canInvokeAgent`, the trigger gate (§8), autopilot admission and member status.

use serde::Serialize;
use squad_model::{Actor, Agent, InvocationTarget, PermissionMode, Timestamp, UserId};

use crate::directory::Directory;
use crate::records::Principal;

/// `canInvokeAgent(agent, actor, originator)`: may this actor trigger this agent?
///
/// 1. The effective invoker is the actor for a member actor, else the originator (maybe none).
/// 2. The owner may always invoke.
/// 3. Anything but `public_to` denies: no admin bypass, no agent-to-agent bypass.
/// 4. A `workspace` target admits workspace members and any agent or system actor; a `member`
///    target admits that member; `team` targets never match.
///
/// ```
/// use squad_routing::{can_invoke_agent, InMemoryDirectory, Principal};
/// use squad_model::{Agent, AgentId, UserId, WorkspaceId, Timestamp, PermissionMode};
///
/// let owner = UserId::new("u-owner").unwrap();
/// let agent = Agent {
///     id: AgentId::new("a1").unwrap(), workspace_id: WorkspaceId::new("w").unwrap(),
///     name: "Ada".into(), owner_id: Some(owner.clone()), archived_at: None, runtime: None,
///     permission_mode: PermissionMode::Private, invocation_targets: vec![], skills: vec![],
///     instructions: String::new(), created_at: Timestamp::from_unix_seconds(0).unwrap(),
/// };
/// let dir = InMemoryDirectory::new();
/// assert!(can_invoke_agent(&dir, &agent, &Principal::Member(owner.clone()), None));
/// let admin = UserId::new("u-admin").unwrap();
/// assert!(!can_invoke_agent(&dir, &agent, &Principal::Member(admin), None));
/// // An agent acting for the owner passes; with no originator it does not.
/// let other = Principal::Agent(AgentId::new("a2").unwrap());
/// assert!(can_invoke_agent(&dir, &agent, &other, Some(&owner)));
/// assert!(!can_invoke_agent(&dir, &agent, &other, None));
/// ```
pub fn can_invoke_agent(
    dir: &dyn Directory,
    agent: &Agent,
    actor: &Principal,
    originator: Option<&UserId>,
) -> bool {
    let invoker = match actor {
        Principal::Member(u) => Some(u),
        Principal::Agent(_) | Principal::System => originator,
    };
    if let (Some(inv), Some(owner)) = (invoker, agent.owner_id.as_ref())
        && inv == owner
    {
        return true;
    }
    if agent.permission_mode != PermissionMode::PublicTo {
        return false;
    }
    agent.invocation_targets.iter().any(|t| match t {
        InvocationTarget::Workspace => {
            !matches!(actor, Principal::Member(_))
                || invoker.is_some_and(|u| dir.workspace_role(&agent.workspace_id, u).is_some())
        }
        InvocationTarget::Member(m) => invoker == Some(m),
        InvocationTarget::Team(_) => false,
    })
}

/// Autopilot admission (§6) of the clicker of "run now" (a member), or of the creator for
/// scheduled, webhook and API triggers: the owner; or, for `public_to`, a workspace target with
/// the member in the workspace **or an agent-created autopilot**, or a member target naming the
/// member. No admin bypass.
///
/// ```
/// use squad_routing::{autopilot_admits, InMemoryDirectory};
/// use squad_model::{Actor, Agent, AgentId, InvocationTarget, PermissionMode, Timestamp, UserId, WorkspaceId};
///
/// let mut agent = Agent {
///     id: AgentId::new("a1").unwrap(), workspace_id: WorkspaceId::new("w").unwrap(),
///     name: "Ada".into(), owner_id: None, archived_at: None, runtime: None,
///     permission_mode: PermissionMode::PublicTo, invocation_targets: vec![InvocationTarget::Workspace],
///     skills: vec![], instructions: String::new(), created_at: Timestamp::from_unix_seconds(0).unwrap(),
/// };
/// let dir = InMemoryDirectory::new();
/// let by_agent = Actor::Agent(AgentId::new("a2").unwrap());
/// // An agent-created autopilot passes a workspace target; a stranger does not.
/// assert!(autopilot_admits(&dir, &agent, &by_agent));
/// assert!(!autopilot_admits(&dir, &agent, &Actor::Member(UserId::new("u9").unwrap())));
/// // A private agent admits only its owner.
/// agent.permission_mode = PermissionMode::Private;
/// assert!(!autopilot_admits(&dir, &agent, &by_agent));
/// ```
pub fn autopilot_admits(dir: &dyn Directory, agent: &Agent, who: &Actor) -> bool {
    let member = match who {
        Actor::Member(u) => Some(u),
        Actor::Agent(_) => None,
    };
    if member.is_some() && agent.owner_id.as_ref() == member {
        return true;
    }
    if agent.permission_mode != PermissionMode::PublicTo {
        return false;
    }
    agent.invocation_targets.iter().any(|t| match t {
        InvocationTarget::Workspace => match member {
            Some(u) => dir.workspace_role(&agent.workspace_id, u).is_some(),
            None => true,
        },
        InvocationTarget::Member(m) => member == Some(m),
        InvocationTarget::Team(_) => false,
    })
}

/// The status shown for an agent member (§2; first match wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberStatus {
    /// Archived.
    Archived,
    /// Has a dispatched or running task (or one waiting for a local directory).
    Working,
    /// No runtime, or offline for 5 minutes or more.
    Offline,
    /// Runtime online.
    Idle,
    /// Offline but seen less than 5 minutes ago.
    Unstable,
}

/// Computes an agent member's status. `working` is whether the agent has a dispatched, running or
/// waiting-for-directory task.
pub fn member_status(agent: &Agent, working: bool, now: Timestamp) -> MemberStatus {
    if agent.is_archived() {
        return MemberStatus::Archived;
    }
    if working {
        return MemberStatus::Working;
    }
    let Some(rt) = &agent.runtime else {
        return MemberStatus::Offline;
    };
    if rt.status == squad_model::RuntimeStatus::Online {
        return MemberStatus::Idle;
    }
    match rt.last_seen_at {
        Some(seen) if now.seconds_since(&seen) < 300 => MemberStatus::Unstable,
        _ => MemberStatus::Offline,
    }
}
