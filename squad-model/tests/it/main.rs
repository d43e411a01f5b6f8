//! Integration tests of squad-model: round trips, naming rules and schema validation.
#![expect(
    clippy::unwrap_used,
    reason = "a test panics on failure; that is the point"
)]

mod agent_name;
mod redact;
mod roundtrip;
mod schema;
mod values;
