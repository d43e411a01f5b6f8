#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
pub mod state;
pub mod transport;

pub use error::{Error, ErrorKind, Result};
