//! The redactor: no canary embedded in arbitrary text survives it, and it is idempotent.

use proptest::prelude::*;
use squad_model::redact::{REDACTED, Redactor};

/// Arbitrary surrounding text: printable ASCII (URL and pair syntax included), newlines and
/// any other characters.
fn noise() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ -~\n]{0,60}",
        "\\PC{0,30}",
        "(https?://|ssh://|=|&|\\?|@|/| |token=|ghp_|Bearer |:){0,6}[a-z0-9]{0,8}",
    ]
}

/// A canary secret: token characters, long enough to be unmistakable.
fn canary() -> impl Strategy<Value = String> {
    "[A-Za-z0-9][A-Za-z0-9_-]{15,40}"
}

/// `true` when some 12-byte window of `canary` appears in `text`: a partial leak counts.
fn leaks(text: &str, canary: &str) -> bool {
    let bytes = canary.as_bytes();
    bytes
        .windows(12.min(bytes.len()))
        .any(|w| text.contains(std::str::from_utf8(w).unwrap()))
}

/// The ways a credential is embedded in external text (git's, HTTP's, the OS's).
fn embed(shape: usize, canary: &str) -> String {
    match shape % 8 {
        0 => format!("https://user:{canary}@example.invalid/r.git"),
        1 => format!("https://{canary}@example.invalid/r.git"),
        2 => format!("https://example.invalid/r.git?access_token={canary}"),
        3 => format!("https://example.invalid/a/b?x=1&sig={canary}#frag"),
        4 => format!("fatal: repository 'http://127.0.0.1:9/ghp_{canary}/r.git/' not found"),
        5 => format!("token github_pat_{canary} refused"),
        6 => format!("client_secret={canary}"),
        _ => format!("Authorization: Bearer {canary}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn an_exact_secret_never_survives(before in noise(), after in noise(), secret in canary()) {
        let r = Redactor::new().with_secret(secret.clone());
        let text = format!("{before}{secret}{after}");
        let out = r.redact(&text);
        prop_assert!(!out.contains(&secret), "{out}");
    }

    #[test]
    fn credential_shapes_never_survive(
        before in noise(),
        after in noise(),
        secret in canary(),
        shape in 0usize..8,
    ) {
        // A separator on each side, as git's and HTTP's messages quote or space their URLs.
        let text = format!("{before} {} {after}", embed(shape, &secret));
        let out = Redactor::new().redact(&text);
        prop_assert!(!leaks(&out, &secret), "{text:?} -> {out:?}");
    }

    #[test]
    fn redaction_is_idempotent(text in noise(), more in noise(), secret in canary()) {
        for r in [Redactor::new(), Redactor::new().with_secret(secret.clone())] {
            let input = format!("{text}{secret}{more}");
            let once = r.redact(&input).into_owned();
            let twice = r.redact(&once).into_owned();
            prop_assert_eq!(&once, &twice, "{:?}", input);
        }
    }

    #[test]
    fn text_without_credentials_is_unchanged(text in "[a-zA-Z ,.!'()]{0,80}") {
        prop_assert_eq!(Redactor::new().redact(&text), text.as_str());
    }
}

#[test]
fn from_env_redacts_the_secret_variables() {
    // `from_env` reads the process environment, which a test must not change: the check runs
    // in a child (this same test) started with the variables set.
    let exe = std::env::current_exe().unwrap();
    if std::env::var_os("SQUAD_MODEL_REDACT_CHILD").is_some() {
        let r = Redactor::from_env();
        let text = "t=CANARYtok h=CANARYgh s=CANARYsec w=https://hooks.example/services/CANARYpath?k=CANARYq";
        let out = r.redact(text);
        assert!(!out.contains("CANARY"), "{out}");
        assert!(out.contains(REDACTED));
        return;
    }
    let status = std::process::Command::new(exe)
        .args([
            "--exact",
            "redact::from_env_redacts_the_secret_variables",
            "--nocapture",
        ])
        .env("SQUAD_MODEL_REDACT_CHILD", "1")
        .env("GITHUB_TOKEN", "CANARYtok")
        .env("GH_TOKEN", "CANARYgh")
        .env("SQUAD_WEBHOOK_SECRET", "CANARYsec")
        .env(
            "SQUAD_WEBHOOK_URL",
            "https://hooks.example/services/CANARYpath?k=CANARYq",
        )
        .status()
        .unwrap();
    assert!(status.success());
}
