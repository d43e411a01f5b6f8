#![doc = include_str!("../README.md")]
#![doc = document_features::document_features!()]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod bm25;
mod date;
mod entry;
mod error;
mod import;
mod index;
mod lock;
mod matrix;
mod name;
mod ops;
mod render;
mod scribe;
mod spawn;
mod store;

#[cfg(feature = "conformance")]
#[cfg_attr(docsrs, doc(cfg(feature = "conformance")))]
pub mod conformance;

pub use bm25::{Bm25, tokenize};
pub use date::parse_date;
pub use entry::{Entry, FreeLine, Item, Kind, MemoryDoc, ParseOptions};
pub use error::{Error, ErrorKind, Level, Problem, Result};
pub use import::{
    ImportOptions, ImportProgress, ImportReport, ImportSource, ImportStage, ImportTarget,
    PlannedDoc, import, import_with_progress,
};
pub use index::{build_index, index_matches};
pub use lock::{MAX_LOCK_WAIT, Ticket};
pub use matrix::{LoadPlan, Situation, TierSet};
pub use name::{MAX_NAME_LEN, MemoryId, TopicName};
pub use ops::{Found, Hit, add, search, show, supersede};
pub use render::{
    Budget, FileReport, LeftOut, LeftOutDetail, LoadReason, Loaded, Manifest, PINNED_PREFIXES,
    Reason, Rendered, Source, SpawnInputs, TierReport, is_pinned, render, render_with,
};
pub use scribe::{ExtractiveSummarizer, Scribe, ScribeConfig, ScribeReport, Summarizer};
pub use spawn::{Touch, spawn, spawn_with, validate};
/// The shared vocabulary (`AgentName`, `Timestamp`, ...), re-exported so that a tool depending on
/// this crate alone names every type its API takes (`squad_memory::squad_model::...`), at the
/// version this crate uses.
pub use squad_model;
pub use store::{
    DocReader, DocRef, DocStamp, FsStore, InMemoryStore, MAX_FILE_BYTES, MemoryStore, Reindexed,
    StoreLock, Tier,
};
