#![allow(clippy::unwrap_used, reason = "tests unwrap")]
