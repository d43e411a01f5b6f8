//! The webhook channel against a real HTTP server on 127.0.0.1.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use squad_model::ChannelKind;
use squad_notify::webhook::{
    SIGNATURE_HEADER, WEBHOOK_SECRET_ENV, WEBHOOK_URL_ENV, WebhookChannel, WebhookConfig, sign,
    verify_signature,
};
use squad_notify::*;

use crate::common::*;

const CANARY_PATH: &str = "/services/T000/B000/CANARY-url-4d1f9a";
const CANARY_SECRET: &str = "CANARY-secret-8e2b71";

fn fast() -> WebhookConfig {
    WebhookConfig {
        timeout: Duration::from_millis(300),
        retries: 2,
        backoff: Duration::from_millis(20),
        slack_text: true,
    }
}

fn channel(url: Option<String>, secret: Option<&str>, config: WebhookConfig) -> WebhookChannel {
    let mut env = HashMap::new();
    if let Some(u) = url {
        env.insert(WEBHOOK_URL_ENV.to_owned(), u);
    }
    if let Some(s) = secret {
        env.insert(WEBHOOK_SECRET_ENV.to_owned(), s.to_owned());
    }
    WebhookChannel::with_env(config, clock(), Box::new(move |k| env.get(k).cloned())).unwrap()
}

fn assert_no_canary(what: &str, text: &str) {
    assert!(!text.contains("CANARY"), "{what} leaks a secret: {text}");
}

fn sample_gate() -> Gate {
    Gate::open(
        &request(Mode::Autopilot, Trigger::ImpactfulAction),
        RunId::new("run-1").unwrap(),
        squad_model::Timestamp::from_unix_seconds(1_800_000_000).unwrap(),
        600,
    )
    .unwrap()
}

#[tokio::test]
async fn delivered_signed_and_verified_by_the_server() {
    let server = HttpServer::start(Behavior::Status(200));
    let hook = channel(Some(server.url(CANARY_PATH)), Some(CANARY_SECRET), fast());
    let mut gate = sample_gate();
    gate.topic = "<!channel> & friends".into();
    let d = hook.notify(&gate).await.unwrap();
    assert_eq!(d.channel, ChannelKind::Webhook);
    assert_eq!(d.attempts, 1);
    assert_eq!(d.approval_ref, "webhook (outbound only)");
    assert_no_canary("delivery", &format!("{d:?}"));
    assert_no_canary("channel debug", &format!("{hook:?}"));

    let got = server.received();
    assert_eq!(got.len(), 1);
    let r = &got[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, CANARY_PATH);
    assert_eq!(r.headers["content-type"], "application/json");
    let sig = &r.headers[&SIGNATURE_HEADER.to_ascii_lowercase()];
    assert!(
        verify_signature(CANARY_SECRET.as_bytes(), &r.body, sig),
        "signature verifies on the raw body"
    );
    assert!(!verify_signature(b"wrong", &r.body, sig));
    assert_eq!(sig, &sign(CANARY_SECRET.as_bytes(), &r.body));
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(body["gate"], gate.id.as_str());
    assert_eq!(body["run"], "run-1", "the payload names the run");
    assert_eq!(body["digest"], gate.digest);
    assert_eq!(body["deliveryId"], d.delivery_id.clone().unwrap());
    assert_eq!(body["sentAt"], "2027-01-15T08:00:00Z");
    assert_eq!(body["trigger"], "impactful-action");
    assert_eq!(body["awaiting"], "approve the migration");
    let text = body["text"].as_str().unwrap();
    assert!(
        text.contains("&lt;!channel&gt; &amp; friends"),
        "Slack text is escaped: {text}"
    );
    assert_no_canary("body", &String::from_utf8_lossy(&r.body));
}

#[tokio::test]
async fn no_secret_means_no_signature_header() {
    let server = HttpServer::start(Behavior::Status(204));
    let hook = channel(
        Some(server.url("/hook")),
        None,
        WebhookConfig {
            slack_text: false,
            ..fast()
        },
    );
    hook.notify(&sample_gate()).await.unwrap();
    let r = &server.received()[0];
    assert!(
        !r.headers
            .contains_key(&SIGNATURE_HEADER.to_ascii_lowercase())
    );
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert!(body.get("text").is_none());
}

#[tokio::test]
async fn a_500_gets_bounded_retries_a_logged_failure_and_the_gate_stays_pending() {
    let server = HttpServer::start(Behavior::Status(500));
    let hook = Arc::new(channel(
        Some(server.url(CANARY_PATH)),
        Some(CANARY_SECRET),
        fast(),
    ));
    let e = env();
    let chat = Arc::new(InChatChannel::new(
        Box::new(std::io::sink()),
        e.clock.clone(),
    ));
    let fan = FanOut::new().with(hook).with(chat);
    let RequestOutcome::Opened { gate, deliveries } = e
        .approvals
        .request(&request(Mode::Autopilot, Trigger::RiskGate), None, 60, &fan)
        .await
        .unwrap()
    else {
        panic!()
    };
    let got = server.received();
    assert_eq!(got.len(), 3, "1 attempt + 2 retries, no more");
    assert!(
        got.windows(2).all(|w| w[0].body == w[1].body),
        "retries resend the same signed bytes"
    );
    let err = deliveries[0].result.as_ref().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Delivery);
    assert_eq!(
        err.to_string(),
        "webhook delivery failed after 3 attempts: HTTP 500"
    );
    assert_no_canary(
        "error",
        &format!("{} {err:?}", crate::common::with_sources(err)),
    );
    assert_eq!(gate.state, GateState::Pending);
    assert_eq!(
        e.approvals
            .state()
            .unwrap()
            .approval
            .pending_gates
            .first()
            .cloned()
            .unwrap()
            .id,
        gate.id
    );
    let log = e.log();
    assert!(log.contains("* Delivery: webhook failed: webhook delivery failed after 3 attempts: HTTP 500 (degraded to in-chat)"), "{log}");
    assert_no_canary("log", &log);
    assert_no_canary(
        "state",
        &std::fs::read_to_string(e.approvals.dir().state_path()).unwrap(),
    );
}

#[tokio::test]
async fn a_slow_server_times_out_with_bounded_retries_and_the_gate_stays_pending() {
    let server = HttpServer::start(Behavior::Slow(Duration::from_secs(3)));
    let hook = channel(
        Some(server.url(CANARY_PATH)),
        Some(CANARY_SECRET),
        WebhookConfig {
            retries: 1,
            ..fast()
        },
    );
    let started = std::time::Instant::now();
    let err = hook.notify(&sample_gate()).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "bounded by the timeouts, not the server"
    );
    assert_eq!(
        err.to_string(),
        "webhook delivery failed after 2 attempts: timed out"
    );
    assert_no_canary(
        "error",
        &format!("{} {err:?}", crate::common::with_sources(&err)),
    );
    // Give the server a moment to record the second request.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(server.received().len(), 2);

    // Through the service: the failure is logged and the gate stays pending.
    let e = env();
    let fan = FanOut::new().with(Arc::new(hook)).with(e.phone.clone());
    let RequestOutcome::Opened { gate, deliveries } = e
        .approvals
        .request(
            &request(Mode::Autopilot, Trigger::FinalOutcome),
            None,
            60,
            &fan,
        )
        .await
        .unwrap()
    else {
        panic!()
    };
    assert!(deliveries[0].result.is_err() && deliveries[1].result.is_ok());
    assert_eq!(
        e.approvals
            .state()
            .unwrap()
            .approval
            .pending_gates
            .first()
            .cloned()
            .unwrap()
            .id,
        gate.id
    );
    let log = e.log();
    assert!(log.contains("* Delivery: webhook failed: webhook delivery failed after 2 attempts: timed out (degraded to in-chat)"), "{log}");
    assert!(log.contains("* Resolved: pending"));
    assert_no_canary("log", &log);
}

#[tokio::test]
async fn refused_unreachable_and_malformed_urls_never_leak() {
    // 4xx other than 408/429: no retry.
    let server = HttpServer::start(Behavior::Status(404));
    let hook = channel(Some(server.url(CANARY_PATH)), None, fast());
    let err = hook.notify(&sample_gate()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "webhook delivery refused after 1 attempt: HTTP 404"
    );
    assert_eq!(server.received().len(), 1);

    // Nothing listens: connection failures are retried, then reported by class.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let hook = channel(
        Some(format!("http://127.0.0.1:{port}{CANARY_PATH}")),
        None,
        fast(),
    );
    let err = hook.notify(&sample_gate()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "webhook delivery failed after 3 attempts: connection failed"
    );
    assert_no_canary(
        "error",
        &format!("{} {err:?}", crate::common::with_sources(&err)),
    );

    for bad in [
        "CANARY-not-a-url",
        "ftp://CANARY.invalid/x",
        "http://CANARY user@/x",
    ] {
        let hook = channel(Some(bad.to_owned()), Some(CANARY_SECRET), fast());
        let err = hook.notify(&sample_gate()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Delivery, "{bad}");
        assert_no_canary(
            "error",
            &format!("{} {err:?}", crate::common::with_sources(&err)),
        );
    }
}

#[tokio::test]
async fn without_a_url_the_channel_is_unavailable() {
    for url in [None, Some(String::new()), Some("  ".to_owned())] {
        let hook = channel(url, Some(CANARY_SECRET), fast());
        assert!(!hook.is_configured());
        let err = hook.notify(&sample_gate()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unavailable);
        assert!(err.to_string().contains("SQUAD_WEBHOOK_URL is not set"));
        assert_no_canary(
            "error",
            &format!("{} {err:?}", crate::common::with_sources(&err)),
        );
    }
}

#[test]
fn signatures_follow_githubs_scheme() {
    // Known-answer check: HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog").
    assert_eq!(
        sign(b"key", b"The quick brown fox jumps over the lazy dog"),
        "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
    );
    for bad in ["", "sha1=abc", "sha256=zz", "sha256=", "f7bc83f4"] {
        assert!(!verify_signature(b"key", b"x", bad), "{bad:?}");
    }
}
