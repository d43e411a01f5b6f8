#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
mod id;
mod name;
mod note;
mod notify;
pub mod redact;
pub mod schema;
mod squad;
mod time;

pub use error::{Error, Result, SchemaViolation, SchemaViolations};
pub use id::{
    AgentId, AutopilotId, CommentId, EntryId, IssueId, RuntimeId, SquadId, SquadMemberId, TaskId,
    UserId, WorkspaceId,
};
pub use name::{AgentName, MAX_AGENT_NAME_LEN, NOTES_REF_PREFIX, SHARED_NAMESPACES};
pub use note::{Confidence, NoteEntry, NoteType};
pub use notify::{ChannelKind, GithubTarget, NotifySettings};
pub use squad::{
    Actor, Agent, Assignee, Autopilot, AutopilotStatus, ExecutionMode, InvocationTarget, Issue,
    IssueStatus, MemberRef, MemberType, Origin, PermissionMode, RuntimeBinding, RuntimeStatus,
    Squad, SquadMember, Task, TaskContext, TaskStatus,
};
pub use time::Timestamp;
