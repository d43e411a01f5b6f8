//! Integration tests of `squad-routing`.
#![allow(
    clippy::unwrap_used,
    reason = "a test panics on failure; that is the point"
)]

mod world;

mod assign;
mod autopilot;
mod briefing;
mod child_done;
mod comments;
mod props;
mod replay;
mod squads;
