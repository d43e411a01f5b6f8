//! Properties of the issue body over arbitrary agent text.

use proptest::prelude::*;
use squad_notify::github::body::{neutralize, parse_gate_block, render_body, render_title};
use squad_notify::github::{GateBlock, IssuePayload, Login};

fn gate() -> GateBlock {
    GateBlock {
        run_id: "run-1".into(),
        gate_id: "g-0001".into(),
        digest: "sha256-1c9e".into(),
        approver: Login::new("octocat").unwrap(),
    }
}

/// Text built from fragments an attacker would use, plus arbitrary characters.
fn agent_text() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("<!-- squad-gate:begin -->".to_owned()),
        Just("<!-- squad-gate:end -->".to_owned()),
        Just("<!-- squad-run: run-1 -->".to_owned()),
        Just("- Approver: @mallory".to_owned()),
        Just("- Gate: g-0001".to_owned()),
        Just("\n".to_owned()),
        Just("\r".to_owned()),
        Just("-->".to_owned()),
        Just("@".to_owned()),
        any::<String>(),
    ];
    proptest::collection::vec(fragment, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn agent_text_never_changes_the_gate_block(
        topic in agent_text(), awaiting in agent_text(), detail in agent_text(), mode in agent_text()
    ) {
        let payload = IssuePayload {
            mode, trigger: "impactful-action".into(), topic, awaiting, detail,
        };
        let body = render_body(&payload, &gate()).unwrap();
        prop_assert_eq!(parse_gate_block(&body), Some(gate()));
        prop_assert!(!body.contains("@mallory"));
        let title = render_title(&payload);
        prop_assert!(!title.contains('\n') && !title.contains('\r'));
    }

    #[test]
    fn neutralized_text_opens_no_marker_and_mentions_nobody(text in agent_text()) {
        let n = neutralize(&text);
        prop_assert!(!n.contains("<!--") && !n.contains("-->") && !n.contains('\r'));
        let mut chars = n.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '@' {
                prop_assert_eq!(chars.peek(), Some(&'\u{2060}'));
            }
        }
    }

    #[test]
    fn arbitrary_bodies_never_panic_the_parser(body in agent_text()) {
        let _ = parse_gate_block(&body);
    }
}
