#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod apply;
pub mod briefing;
#[cfg(feature = "conformance")]
#[cfg_attr(docsrs, doc(cfg(feature = "conformance")))]
pub mod conformance;
mod decision;
mod directory;
mod engine;
mod error;
pub mod event;
pub mod generate;
mod invoke;
pub mod mention;
mod policy;
mod records;
mod simple;
pub mod simulate;
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub mod sqlite;
pub mod trace;

pub use apply::{apply, apply_drain, apply_owned};
pub use decision::{Decision, MentionOutcome, NoopReason, Rule, TriggerSource};
pub use directory::{Directory, InMemoryDirectory};
pub use engine::{Decisions, Engine};
pub use error::{Error, ErrorKind, Result};
pub use event::{AutopilotTrigger, Event};
pub use invoke::{MemberStatus, autopilot_admits, can_invoke_agent, member_status};
pub use policy::RoutingPolicy;
pub use records::{
    Comment, EvaluationOutcome, Membership, Principal, User, Workspace, WorkspaceRole,
};
pub use simple::SimpleDirectory;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteDirectory;
pub use trace::{Replay, TraceLine};
