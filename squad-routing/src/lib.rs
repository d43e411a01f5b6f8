#![doc = include_str!("../README.md")]
#![doc = document_features::document_features!()]
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
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub mod postgres;
mod records;
mod simple;
pub mod simulate;
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub mod sqlite;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod store;
pub mod trace;

pub use apply::{apply, apply_drain, apply_owned};
pub use decision::{Decision, MentionOutcome, NoopReason, Rule, TriggerSource};
pub use directory::{Directory, InMemoryDirectory};
pub use engine::{Decisions, Engine};
pub use error::{Error, ErrorKind, Result};
pub use event::{AutopilotTrigger, Event};
pub use invoke::{MemberStatus, autopilot_admits, can_invoke_agent, member_status};
pub use policy::RoutingPolicy;
#[cfg(feature = "postgres")]
pub use postgres::PostgresDirectory;
pub use records::{
    Comment, EvaluationOutcome, Membership, Principal, User, Workspace, WorkspaceRole,
};
pub use simple::SimpleDirectory;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteDirectory;
/// The shared vocabulary (the ids, `Agent`, `Squad`, `Issue`, `Timestamp`, ...), re-exported so
/// that a tool depending on this crate alone names every type its API takes
/// (`squad_routing::squad_model::...`), at the version this crate uses.
pub use squad_model;
pub use trace::{Replay, TraceLine};
