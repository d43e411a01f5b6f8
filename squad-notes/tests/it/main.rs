//! Integration tests of squad-notes.
#![expect(
    clippy::unwrap_used,
    reason = "a test panics on failure; that is the point"
)]

#[cfg(feature = "gix")]
mod bulk_read;
mod common;
mod concurrency;
mod conformance;
mod format;
mod git2;
mod interop;
mod oid;
mod protocol;
mod sync;
#[cfg(feature = "gix")]
mod t3303;

#[test]
fn error_kinds_classify_user_errors() {
    use squad_notes::{Error, ErrorKind};
    assert!(Error::new(ErrorKind::InvalidInput, "t", "bad").is_user_error());
    assert!(Error::new(ErrorKind::PermissionDenied, "t", "no").is_user_error());
    assert!(!Error::new(ErrorKind::Backend, "t", "io").is_user_error());
}

#[cfg(feature = "gix")]
mod promote;
mod state;
mod state_git;
#[cfg(feature = "gix")]
mod state_orphan;
mod state_transport;
