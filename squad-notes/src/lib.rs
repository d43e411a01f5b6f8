#![doc = include_str!("../README.md")]
#![doc = document_features::document_features!()]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod backend;
#[cfg(feature = "conformance")]
pub mod conformance;
mod error;
pub mod format;
#[cfg(feature = "git2")]
mod git2_backend;
#[cfg(feature = "gix")]
mod git_trie;
#[cfg(feature = "gix")]
mod gix_backend;
#[cfg(feature = "gix")]
mod gix_bulk;
#[cfg(feature = "gix")]
mod gix_sync;
pub mod health;
mod memory;
mod notes;
mod oid;
mod parallel;
#[cfg(feature = "gix")]
#[cfg_attr(docsrs, doc(cfg(feature = "gix")))]
pub mod promote;
mod scan;
#[cfg(feature = "sign")]
#[cfg_attr(docsrs, doc(cfg(feature = "sign")))]
pub mod sign;
pub mod state;
pub mod sync;
pub mod transport;

pub use backend::{NoteEdit, NotesBackend, NotesBackendExt, WriteLock};
pub use error::{Error, ErrorKind, Result};
#[cfg(feature = "git2")]
pub use git2_backend::Git2Notes;
#[cfg(feature = "gix")]
pub use gix_backend::GixNotes;
pub use memory::InMemoryNotes;
pub use notes::{APPEND_MESSAGE, CARRY_MESSAGE, CarryReport, Notes, RetryPolicy, WriteOutcome};
pub use oid::{NotesRef, ObjectType, Oid};
/// The shared vocabulary (`AgentName`, `NoteEntry`, `NoteType`, `Timestamp`, ...), re-exported so
/// that a tool depending on this crate alone names every type its API takes
/// (`squad_notes::squad_model::...`), at the version this crate uses.
pub use squad_model;
