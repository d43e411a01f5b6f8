#![doc = include_str!("../README.md")]
#![doc = document_features::document_features!()]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod approvals;
mod auth;
mod channel;
mod clock;
mod error;
mod gate;
#[cfg(feature = "github")]
#[cfg_attr(docsrs, doc(cfg(feature = "github")))]
pub mod github;
mod health;
pub mod host;
mod json;
pub mod log;
mod redact;
mod signal;
pub mod store;
mod wait;
#[cfg(feature = "webhook")]
#[cfg_attr(docsrs, doc(cfg(feature = "webhook")))]
pub mod webhook;

#[cfg(feature = "conformance")]
#[cfg_attr(docsrs, doc(cfg(feature = "conformance")))]
pub mod conformance;

pub use approvals::{Approvals, Consumed, Ignored, RequestOutcome};
pub use auth::{
    Allowed, ApproverRules, Authorizer, Identity, Refusal, Role, StaticAuthorizer, authorize,
};
pub use channel::{
    ApprovalChannel, Capabilities, ChannelReport, Delivery, FanOut, InChatChannel, InMemoryChannel,
    Polled, Signal, SignalBody, render_payload,
};
pub use clock::{Clock, FixedClock, SystemClock};
pub use error::{Error, ErrorKind, Result};
pub use gate::{
    Applied, Counted, DEFAULT_EXPIRES_IN_SECS, DecisionRecord, Gate, GateId, GatePolicy,
    GateRequest, GateState, MAX_DETAIL_CHARS, MAX_EXPIRES_IN_SECS, MAX_LINE_CHARS, MAX_QUORUM,
    Mode, PolicyDecision, Responder, RunId, Trigger, Vote, check_quorum,
};
pub use health::{Fixed, Health, LogStatus, Status};
pub use json::output_json;
pub use log::{ACK_TITLE, LOG_HEADER, LogEntry, LogReport, log_head, verify_log};
pub use redact::redact_urls;
pub use signal::{
    ChatLines, Command, MAX_NOTE_CHARS, NotCommand, Parsed, ParsedCommand, parse_comment,
    parse_label,
};
pub use squad_fs::StateDir;
/// The shared vocabulary (`ChannelKind`, `NotifySettings`, `Timestamp`, ...), re-exported so that a
/// tool depending on this crate alone names every type its API takes
/// (`squad_notify::squad_model::...`), at the version this crate uses.
pub use squad_model;
pub use store::{ApprovalState, Batch, RunRecord, StateDoc, TamperRecord};
pub use wait::{Next, Pacer, PacerOptions, Turn, WaitEnd, Waiter};

#[cfg(test)]
mod tests {
    use super::*;
    use squad_model::Timestamp;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn public_types_are_send_and_sync() {
        assert_send_sync::<Gate>();
        assert_send_sync::<Approvals>();
        assert_send_sync::<Waiter>();
        assert_send_sync::<FanOut>();
        assert_send_sync::<InChatChannel>();
        assert_send_sync::<Error>();
        assert_send_sync::<std::sync::Arc<dyn ApprovalChannel>>();
        assert_send_sync::<std::sync::Arc<dyn Authorizer>>();
    }

    fn assert_send<T: Send>(_: &T) {}

    #[test]
    fn returned_futures_are_send() {
        // Building the futures does no I/O; they are dropped unpolled.
        let clock = std::sync::Arc::new(FixedClock::at_unix_seconds(0));
        let a = Approvals::new(StateDir::new("/nonexistent/squad-notify"), clock.clone());
        let fan = FanOut::new();
        let req = GateRequest {
            mode: Mode::Autopilot,
            trigger: Trigger::RiskGate,
            topic: "t".into(),
            awaiting: "a".into(),
            detail: String::new(),
        };
        let rules = ApproverRules::default();
        let auth = StaticAuthorizer::new();
        assert_send(&a.request(&req, None, 60, &fan));
        assert_send(&a.consume(&[], &rules, &auth));
        let chat =
            std::sync::Arc::new(InChatChannel::new(Box::new(std::io::sink()), clock.clone()));
        let gate = Gate::open(&req, RunId::generate(), Timestamp::now(), 60).unwrap();
        let mut waiter = Waiter::new(
            a.clone(),
            gate,
            &FanOut::new().with(chat),
            rules.clone(),
            std::sync::Arc::new(StaticAuthorizer::new()),
            &PacerOptions::default(),
        );
        assert_send(&waiter.step());
        let chat = InChatChannel::new(Box::new(std::io::sink()), clock);
        assert_send(
            &chat.poll(&Gate::open(&req, RunId::generate(), Timestamp::now(), 60).unwrap()),
        );
    }
}
