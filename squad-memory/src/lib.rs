#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod bm25;
mod entry;
mod error;
mod matrix;
mod name;
mod render;
mod scribe;
mod spawn;
mod store;

#[cfg(feature = "conformance")]
#[cfg_attr(docsrs, doc(cfg(feature = "conformance")))]
pub mod conformance;

pub use bm25::{Bm25, tokenize};
pub use entry::{Entry, FreeLine, Kind, MemoryDoc, parse_date};
pub use error::{Error, ErrorKind, Problem, Result};
pub use matrix::{LoadPlan, Situation, TierSet};
pub use name::{MAX_NAME_LEN, MemoryId, TopicName};
pub use render::{
    Budget, FileReport, LeftOut, Manifest, PINNED_PREFIXES, Reason, Rendered, Source, SpawnInputs,
    TierReport, render,
};
pub use scribe::{ExtractiveSummarizer, Scribe, ScribeConfig, ScribeReport, Summarizer};
pub use spawn::{Touch, spawn, validate};
pub use store::{DocRef, FsStore, InMemoryStore, MemoryStore, StoreLock, Tier};
