//! The outbound webhook channel (feature `webhook`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use squad_model::ChannelKind;

use crate::channel::{ApprovalChannel, Capabilities, Delivery, Polled, render_payload};
use crate::clock::Clock;
use crate::error::{Error, ErrorKind, Result};
use crate::gate::Gate;

/// The environment variable holding the webhook URL (read at send time, never stored).
pub const WEBHOOK_URL_ENV: &str = "SQUAD_WEBHOOK_URL";
/// The environment variable holding the signing secret (read at send time, never stored).
pub const WEBHOOK_SECRET_ENV: &str = "SQUAD_WEBHOOK_SECRET";
/// The signature header: `sha256=<hex HMAC-SHA256 of the raw body with the secret>`.
pub const SIGNATURE_HEADER: &str = "X-Squad-Signature-256";

/// Most characters of the Slack-compatible `text` field (Slack's text object limit).
const SLACK_TEXT_MAX: usize = 3000;

/// Timeouts and retries of the webhook channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookConfig {
    /// Per attempt (connect + send + response).
    pub timeout: Duration,
    /// Retries after the first attempt (so `retries + 1` attempts at most).
    pub retries: u32,
    /// Wait before the first retry; doubled for each further one.
    pub backoff: Duration,
    /// Add a Slack-compatible `text` field (escaped mrkdwn) to the JSON body.
    pub slack_text: bool,
}

impl Default for WebhookConfig {
    /// 10 s per attempt, 2 retries, 500 ms first backoff, Slack text on.
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            retries: 2,
            backoff: Duration::from_millis(500),
            slack_text: true,
        }
    }
}

impl WebhookConfig {
    /// The defaults, with the timeout per attempt from `SQUAD_WEBHOOK_TIMEOUT_MS` and the number
    /// of retries from `SQUAD_WEBHOOK_RETRIES` when they are set to whole numbers.
    pub fn from_env() -> Self {
        let env = |name: &str| std::env::var(name).ok().and_then(|v| v.trim().parse().ok());
        let mut c = Self::default();
        if let Some(ms) = env("SQUAD_WEBHOOK_TIMEOUT_MS") {
            c.timeout = Duration::from_millis(ms);
        }
        if let Some(n) = env("SQUAD_WEBHOOK_RETRIES") {
            c.retries = u32::try_from(n).unwrap_or(u32::MAX);
        }
        c
    }
}

/// Reads one environment variable by name (the process environment, or a host's secret store).
pub type EnvLookup = dyn Fn(&str) -> Option<String> + Send + Sync;

/// Posts each notification as signed JSON to the URL in `SQUAD_WEBHOOK_URL`. Outbound only:
/// the decision comes back through in-chat or a GitHub issue.
///
/// # Privacy
///
/// The URL and the secret are read from the environment when a notification is sent, kept only
/// for that call, and never written to a `Delivery`, an error message, a log or a file. Errors of
/// the HTTP client (which embed the URL) are reduced to their class: `timed out`,
/// `connection failed`, `HTTP <status>`.
///
/// # Body
///
/// `{"type":"squad.approval","deliveryId":…,"sentAt":…,"gate":…,"run":…,"digest":…,"mode":…,
/// "trigger":…,"topic":…,"awaiting":…,"detail":…,"expires":…,"state":…,"text":…}` with
/// `Content-Type: application/json`; `text` (Slack-compatible) is present when
/// [`WebhookConfig::slack_text`] is on. With a secret, the header
/// `X-Squad-Signature-256: sha256=<hex>` signs the raw body; `sentAt` and `deliveryId` inside the
/// signed body let receivers refuse replays. Retries resend the same bytes.
pub struct WebhookChannel {
    client: reqwest::Client,
    config: WebhookConfig,
    clock: Arc<dyn Clock>,
    env: Box<EnvLookup>,
}

impl fmt::Debug for WebhookChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never prints the URL or the secret (they are not even held).
        f.debug_struct("WebhookChannel")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl WebhookChannel {
    /// A channel reading `SQUAD_WEBHOOK_URL` and `SQUAD_WEBHOOK_SECRET` from the process
    /// environment at send time.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Unavailable`] when the HTTP client cannot be built (no TLS roots).
    pub fn from_env(config: WebhookConfig, clock: Arc<dyn Clock>) -> Result<Self> {
        Self::with_env(config, clock, Box::new(|k: &str| std::env::var(k).ok()))
    }

    /// A channel reading its two variables through `env` (for hosts with their own secret store,
    /// and for tests).
    ///
    /// # Errors
    ///
    /// As [`WebhookChannel::from_env`].
    pub fn with_env(
        config: WebhookConfig,
        clock: Arc<dyn Clock>,
        env: Box<EnvLookup>,
    ) -> Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|_| {
                Error::new(
                    ErrorKind::Unavailable,
                    "webhook.new",
                    "cannot build the HTTP client",
                )
            })?;
        Ok(Self {
            client,
            config,
            clock,
            env,
        })
    }

    /// `true` when a URL is configured right now.
    pub fn is_configured(&self) -> bool {
        (self.env)(WEBHOOK_URL_ENV).is_some_and(|u| !u.trim().is_empty())
    }

    /// The JSON body for `gate`, with `delivery_id` and the send time.
    pub fn body(&self, gate: &Gate, delivery_id: &str) -> String {
        let mut v = serde_json::json!({
            "type": "squad.approval",
            "deliveryId": delivery_id,
            "sentAt": self.clock.now().to_string(),
            "gate": gate.id.as_str(),
            "run": gate.run.as_str(),
            "digest": gate.digest,
            "mode": gate.mode.as_str(),
            "trigger": gate.trigger.as_str(),
            "topic": gate.topic,
            "awaiting": gate.awaiting,
            "detail": gate.detail,
            "expires": gate.expires.to_string(),
            "state": "see .squad/state.json and .squad/notifications.md",
            "outboundOnly": true,
        });
        if self.config.slack_text {
            let text: String = slack_escape(&render_payload(gate))
                .chars()
                .take(SLACK_TEXT_MAX)
                .collect();
            v["text"] = serde_json::Value::String(text);
        }
        v.to_string()
    }
}

/// Escapes `&`, `<` and `>` so agent text cannot ping `<!channel>` or forge links in Slack.
fn slack_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `sha256=<hex HMAC-SHA256 of body with secret>`.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Checks a `sha256=<hex>` signature of `body` in constant time.
pub fn verify_signature(secret: &[u8], body: &[u8], header: &str) -> bool {
    let Some(hex_sig) = header.strip_prefix("sha256=") else {
        return false;
    };
    let Ok(sig) = hex::decode(hex_sig) else {
        return false;
    };
    let Ok(mut mac) = <Hmac<Sha256> as Mac>::new_from_slice(secret) else {
        return false;
    };
    mac.update(body);
    mac.verify_slice(&sig).is_ok()
}

enum Attempt {
    Done,
    Retry(String),
    Fatal(String),
}

#[async_trait::async_trait]
impl ApprovalChannel for WebhookChannel {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Webhook
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            outbound: true,
            inbound: false,
        }
    }

    async fn notify(&self, gate: &Gate) -> Result<Delivery> {
        let Some(url) = (self.env)(WEBHOOK_URL_ENV).filter(|u| !u.trim().is_empty()) else {
            return Err(Error::new(
                ErrorKind::Unavailable,
                "webhook.notify",
                format!(
                    "{WEBHOOK_URL_ENV} is not set, so the webhook channel cannot send; approval stays in-chat"
                ),
            ));
        };
        let secret = (self.env)(WEBHOOK_SECRET_ENV).filter(|s| !s.is_empty());
        let delivery_id = squad_model::EntryId::generate().to_string();
        let body = self.body(gate, &delivery_id);
        let signature = secret
            .as_deref()
            .map(|s| sign(s.as_bytes(), body.as_bytes()));
        let attempts_max = self.config.retries.saturating_add(1);
        let mut backoff = self.config.backoff;
        let mut last = String::new();
        for attempt in 1..=attempts_max {
            let mut req = self
                .client
                .post(url.as_str())
                .header("Content-Type", "application/json")
                .header("User-Agent", "squad-notify")
                .header("X-Squad-Delivery", delivery_id.as_str())
                .body(body.clone());
            if let Some(sig) = &signature {
                req = req.header(SIGNATURE_HEADER, sig.as_str());
            }
            let outcome = match req.send().await {
                Ok(resp) => {
                    let status = resp.status();
                    // Drain the body so the connection can be reused; its content is ignored.
                    let _ = resp.bytes().await;
                    if status.is_success() {
                        Attempt::Done
                    } else if status.is_server_error()
                        || status.as_u16() == 429
                        || status.as_u16() == 408
                    {
                        Attempt::Retry(format!("HTTP {}", status.as_u16()))
                    } else {
                        Attempt::Fatal(format!("HTTP {}", status.as_u16()))
                    }
                }
                Err(e) if e.is_builder() => Attempt::Fatal(classify(&e)),
                Err(e) => Attempt::Retry(classify(&e)),
            };
            match &outcome {
                Attempt::Done => {
                    tracing::info!(gate = %gate.id, delivery_id, attempt, "webhook delivered")
                }
                Attempt::Fatal(m) | Attempt::Retry(m) => {
                    tracing::warn!(gate = %gate.id, delivery_id, attempt, outcome = %m, "webhook delivery failed")
                }
            }
            match outcome {
                Attempt::Done => {
                    return Ok(Delivery {
                        channel: ChannelKind::Webhook,
                        approval_ref: "webhook (outbound only)".to_owned(),
                        delivery_id: Some(delivery_id),
                        locator: None,
                        attempts: attempt,
                    });
                }
                Attempt::Fatal(m) => {
                    return Err(Error::new(
                        ErrorKind::Delivery,
                        "webhook.notify",
                        format!(
                            "webhook delivery refused after {attempt} {}: {m}",
                            if attempt == 1 { "attempt" } else { "attempts" }
                        ),
                    ));
                }
                Attempt::Retry(m) => last = m,
            }
            if attempt < attempts_max {
                tokio::time::sleep(backoff).await;
                backoff = backoff.saturating_mul(2);
            }
        }
        Err(Error::new(
            ErrorKind::Delivery,
            "webhook.notify",
            format!("webhook delivery failed after {attempts_max} attempts: {last}"),
        ))
    }

    async fn poll(&self, _gate: &Gate) -> Result<Polled> {
        Ok(Polled {
            exhausted: true,
            ..Polled::default()
        })
    }
}

/// The class of a client error, without the URL it embeds.
fn classify(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "connection failed".to_owned()
    } else if e.is_builder() {
        "the webhook URL is not a valid http(s) URL".to_owned()
    } else if e.is_redirect() {
        "redirect refused".to_owned()
    } else {
        "request failed".to_owned()
    }
}
