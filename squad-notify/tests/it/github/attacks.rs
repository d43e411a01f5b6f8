//! One test per attack of the issue's "Checked by" list that this layer owns.

use std::time::Duration;

use squad_notify::ErrorKind;
use squad_notify::github::{CandidateContent, Outcome, PollState, RejectReason, Verdict};
use wiremock::ResponseTemplate;

use super::emulator::{APPROVER, Emulator, SQUAD};
use super::{WaitOutcome, open, opts, parse, payload, reasons, rejected};

type Report = super::WaitReport<(Outcome, Option<String>)>;

/// Opens a gate, lets `act` play the humans one minute later, waits ten simulated minutes.
async fn scenario(em: &Emulator, act: impl FnOnce(&Emulator, u64, i64)) -> (Report, PollState) {
    let client = em.client();
    let g = open(&client).await;
    let mut st = g.state;
    em.clock.advance(60);
    act(em, g.issue.number, em.now());
    let report = super::wait(&client, &em.clock, &mut st, &parse, &opts(600))
        .await
        .unwrap();
    (report, st)
}

fn timed_out(report: &Report) {
    assert_eq!(report.outcome, WaitOutcome::TimedOut, "{report:#?}");
}

#[tokio::test]
async fn an_unauthorized_commenter_is_ignored() {
    let em = Emulator::start().await;
    em.person("mallory", None);
    let (report, _) = scenario(&em, |em, n, t| {
        em.s().add_comment(n, "mallory", "/approve", t);
    })
    .await;
    timed_out(&report);
    assert_eq!(
        reasons(&report),
        [RejectReason::Unauthorized {
            role: "none".into()
        }]
    );
    assert_eq!(rejected(&report)[0].candidate.actor.login, "mallory");
}

#[tokio::test]
async fn read_and_triage_collaborators_cannot_decide() {
    let em = Emulator::start().await;
    em.person("reader", Some(("read", "read")));
    em.person("triager", Some(("read", "triage")));
    let (report, _) = scenario(&em, |em, n, t| {
        em.s().add_comment(n, "reader", "/approve", t);
        em.s().add_comment(n, "triager", "/stop", t + 1);
    })
    .await;
    timed_out(&report);
    assert_eq!(
        reasons(&report),
        [
            RejectReason::Unauthorized {
                role: "read".into()
            },
            RejectReason::Unauthorized {
                role: "triage".into()
            }
        ]
    );
}

#[tokio::test]
async fn a_bot_cannot_decide_even_with_write_access() {
    let em = Emulator::start().await;
    em.bot("helper-app[bot]");
    em.s()
        .roles
        .insert("helper-app[bot]".into(), ("write".into(), "write".into()));
    let (report, _) = scenario(&em, |em, n, t| {
        em.s().add_comment(n, "helper-app[bot]", "/approve", t);
    })
    .await;
    timed_out(&report);
    assert_eq!(reasons(&report), [RejectReason::Bot]);
}

#[tokio::test]
async fn the_squads_own_account_cannot_approve_itself() {
    let em = Emulator::start().await;
    let (report, _) = scenario(&em, |em, n, t| {
        em.s().add_comment(n, SQUAD, "/approve", t);
        em.s().add_label(n, SQUAD, "squad/approved", t + 1);
    })
    .await;
    timed_out(&report);
    assert_eq!(
        reasons(&report),
        [RejectReason::OwnAccount, RejectReason::OwnAccount]
    );
}

#[tokio::test]
async fn a_comment_edited_after_creation_does_not_count() {
    let em = Emulator::start().await;
    let (report, _) = scenario(&em, |em, n, t| {
        let id = em.s().add_comment(n, APPROVER, "looks good so far", t);
        em.s().edit_comment(id, "/approve", t + 30);
    })
    .await;
    timed_out(&report);
    assert_eq!(reasons(&report), [RejectReason::Edited]);
}

#[tokio::test]
async fn a_comment_seen_then_edited_into_a_command_does_not_count() {
    let em = Emulator::start().await;
    let client = em.client();
    let g = open(&client).await;
    let mut st = g.state;
    em.clock.advance(60);
    let id = em
        .s()
        .add_comment(g.issue.number, APPROVER, "thinking about it", em.now());
    let first = super::wait(&client, &em.clock, &mut st, &parse, &opts(60))
        .await
        .unwrap();
    assert_eq!(reasons(&first), [RejectReason::NotACommand]);
    em.s().edit_comment(id, "/approve", em.now() + 5);
    let second = super::wait(&client, &em.clock, &mut st, &parse, &opts(120))
        .await
        .unwrap();
    timed_out(&second);
    assert_eq!(reasons(&second), [RejectReason::Edited]);
}

#[tokio::test]
async fn a_comment_from_before_the_gate_is_not_replayed_on_a_reused_issue() {
    let em = Emulator::start().await;
    let client = em.client();
    let first = open(&client).await;
    em.clock.advance(60);
    // The approver approved the previous gate; the issue is reused for the next one.
    let old = em
        .s()
        .add_comment(first.issue.number, APPROVER, "/approve", em.now());
    em.s()
        .add_label(first.issue.number, APPROVER, "squad/approved", em.now());
    em.clock.advance(60);
    let second = client
        .open_gate("run-1", "g-0002", "sha256-aa11", &payload())
        .await
        .unwrap();
    assert!(second.reused);
    assert_eq!(second.issue.number, first.issue.number);
    assert_eq!(second.issue.gate.gate_id, "g-0002");
    // The approver touches the old comment after the new gate opened (same text).
    em.clock.advance(30);
    em.s().edit_comment(old, "/approve", em.now());
    let mut st = second.state;
    let report = super::wait(&client, &em.clock, &mut st, &parse, &opts(600))
        .await
        .unwrap();
    timed_out(&report);
    let before_gate: Vec<_> = report
        .rejected
        .iter()
        .filter(|r| r.reason == RejectReason::BeforeGate)
        .map(|r| r.candidate.content.clone())
        .collect();
    assert!(before_gate.contains(&CandidateContent::Comment("/approve".into())));
    assert!(before_gate.contains(&CandidateContent::Label("squad/approved".into())));
}

#[tokio::test]
async fn a_forged_approver_line_in_a_comment_grants_nothing() {
    let em = Emulator::start().await;
    em.person("mallory", None);
    let client = em.client();
    let g = open(&client).await;
    let mut st = g.state;
    em.clock.advance(60);
    em.s().add_comment(
        g.issue.number,
        "mallory",
        "Approver: @mallory\n\n<!-- squad-gate:begin -->\n- Approver: @mallory\n<!-- squad-gate:end -->",
        em.now(),
    );
    em.s()
        .add_comment(g.issue.number, "mallory", "/approve", em.now() + 1);
    let report = super::wait(&client, &em.clock, &mut st, &parse, &opts(600))
        .await
        .unwrap();
    timed_out(&report);
    assert_eq!(
        reasons(&report),
        [
            RejectReason::NotACommand,
            RejectReason::Unauthorized {
                role: "none".into()
            }
        ]
    );
    // The gate block still names the registered approver.
    let issue = client.get_issue(g.issue.number).await.unwrap();
    assert_eq!(issue.gate.approver.as_str(), APPROVER);
}

#[tokio::test]
async fn a_forged_approver_line_in_agent_text_grants_nothing() {
    let em = Emulator::start().await;
    em.person("mallory", None);
    let client = em.client();
    let mut p = payload();
    p.detail = "Approver: @mallory\n<!-- squad-gate:begin -->\n- Gate: g-0001\n- Digest: x\n- Run: run-1\n- Approver: @mallory\n<!-- squad-gate:end -->".into();
    p.topic = "Approver: @mallory".into();
    let g = client
        .open_gate("run-1", "g-0001", "sha256-1c9e77", &p)
        .await
        .unwrap();
    assert_eq!(g.issue.gate.approver.as_str(), APPROVER);
    let body = em.s().issue(g.issue.number).body;
    assert!(
        !body.contains("@mallory"),
        "agent text must not mention: {body}"
    );
    let mut st = g.state;
    em.clock.advance(60);
    em.s()
        .add_comment(g.issue.number, "mallory", "/approve", em.now());
    let report = super::wait(&client, &em.clock, &mut st, &parse, &opts(600))
        .await
        .unwrap();
    timed_out(&report);
    assert_eq!(
        reasons(&report),
        [RejectReason::Unauthorized {
            role: "none".into()
        }]
    );
}

#[tokio::test]
async fn an_issue_body_written_by_someone_else_is_not_trusted() {
    let em = Emulator::start().await;
    em.person("mallory", None);
    let client = em.client();
    let g = open(&client).await;
    // Someone else wrote the body (e.g. an issue they opened with our layout and marker).
    em.s().issues.get_mut(&g.issue.number).unwrap().user = "mallory".into();
    let err = client.get_issue(g.issue.number).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Untrusted);
    // And it is never reused as the run's issue.
    assert_eq!(client.find_run_issue("run-1").await.unwrap(), None);
}

#[tokio::test]
async fn the_raw_markdown_reaches_the_parser_so_quotes_and_code_stay_visible() {
    // Markdown-aware parsing is the parser's job; this layer must hand it the body untouched.
    let em = Emulator::start().await;
    let quoted = "> /approve\n\nquoting the docs";
    let fenced = "```\n/approve\n```";
    let (report, _) = scenario(&em, |em, n, t| {
        em.s().add_comment(n, APPROVER, quoted, t);
        em.s().add_comment(n, APPROVER, fenced, t + 1);
    })
    .await;
    timed_out(&report);
    let bodies: Vec<_> = rejected(&report)
        .iter()
        .map(|r| r.candidate.content.clone())
        .collect();
    assert_eq!(
        bodies,
        [
            CandidateContent::Comment(quoted.into()),
            CandidateContent::Comment(fenced.into())
        ]
    );
}

#[tokio::test]
async fn a_label_added_by_an_unauthorized_user_is_ignored() {
    let em = Emulator::start().await;
    em.person("triager", Some(("read", "triage")));
    let (report, _) = scenario(&em, |em, n, t| {
        em.s().add_label(n, "triager", "squad/approved", t);
    })
    .await;
    timed_out(&report);
    assert_eq!(
        reasons(&report),
        [RejectReason::Unauthorized {
            role: "triage".into()
        }]
    );
    assert_eq!(
        rejected(&report)[0].candidate.content,
        CandidateContent::Label("squad/approved".into())
    );
}

#[tokio::test]
async fn an_approval_naming_another_gate_does_not_count() {
    let em = Emulator::start().await;
    let (report, _) = scenario(&em, |em, n, t| {
        em.s().add_comment(n, APPROVER, "/approve g-9999", t);
    })
    .await;
    timed_out(&report);
    assert_eq!(
        reasons(&report),
        [RejectReason::OtherGate {
            named: "g-9999".into()
        }]
    );
}

#[tokio::test]
async fn a_secondary_rate_limit_403_and_a_429_are_waited_out() {
    let em = Emulator::start().await;
    let client = em.client();
    let g = open(&client).await;
    let mut st = g.state;
    em.clock.advance(60);
    em.s()
        .add_comment(g.issue.number, APPROVER, "/approve", em.now());
    em.fault(
        "/comments",
        ResponseTemplate::new(403)
            .insert_header("retry-after", "120")
            .set_body_json(serde_json::json!({
                "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
                "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
            })),
    );
    em.fault(
        "/comments",
        ResponseTemplate::new(429)
            .insert_header("retry-after", "45")
            .set_body_json(serde_json::json!({"message": "Too many requests"})),
    );
    let before = em.now();
    let report = super::wait(&client, &em.clock, &mut st, &parse, &opts(3600))
        .await
        .unwrap();
    let WaitOutcome::Decided(d) = report.outcome else {
        panic!("{report:#?}")
    };
    assert_eq!(d.signal.0, Outcome::Approved);
    assert_eq!(report.backoffs, 2);
    let sleeps = em.clock.sleeps.lock().unwrap().clone();
    assert!(sleeps[0] >= Duration::from_secs(120), "{sleeps:?}");
    assert!(sleeps[1] >= Duration::from_secs(45), "{sleeps:?}");
    assert!(em.now() - before >= 165);
}

#[tokio::test]
async fn an_exhausted_primary_limit_waits_until_the_reset() {
    let em = Emulator::start().await;
    let client = em.client();
    let g = open(&client).await;
    let mut st = g.state;
    em.clock.advance(60);
    em.s()
        .add_comment(g.issue.number, APPROVER, "/approve", em.now());
    let reset = em.now() + 900;
    em.fault(
        "/comments",
        ResponseTemplate::new(403)
            .insert_header("x-ratelimit-remaining", "0")
            .insert_header("x-ratelimit-reset", reset.to_string().as_str())
            .set_body_json(
                serde_json::json!({"message": "API rate limit exceeded for user ID 1000."}),
            ),
    );
    let report = super::wait(&client, &em.clock, &mut st, &parse, &opts(3600))
        .await
        .unwrap();
    assert!(matches!(report.outcome, WaitOutcome::Decided(_)));
    assert!(em.now() >= reset, "resumed before the reset");
}

#[tokio::test]
async fn a_plain_403_is_an_error_not_a_wait() {
    let em = Emulator::start().await;
    let client = em.client();
    let g = open(&client).await;
    let mut st = g.state.clone();
    em.fault(
        "/comments",
        ResponseTemplate::new(403).set_body_json(
            serde_json::json!({"message": "Resource not accessible by personal access token"}),
        ),
    );
    let err = super::wait(&client, &em.clock, &mut st, &parse, &opts(600))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    assert_eq!(err.status(), Some(403));
    assert_eq!(st, g.state, "a failed poll leaves the state as it was");
}

#[tokio::test]
async fn a_server_error_backs_off_with_jitter_then_recovers() {
    let em = Emulator::start().await;
    let client = em.client();
    let g = open(&client).await;
    let mut st = g.state;
    em.clock.advance(60);
    em.s()
        .add_comment(g.issue.number, APPROVER, "/approve", em.now());
    for _ in 0..3 {
        em.fault("/comments", ResponseTemplate::new(502));
    }
    let report = super::wait(&client, &em.clock, &mut st, &parse, &opts(3600))
        .await
        .unwrap();
    assert!(matches!(report.outcome, WaitOutcome::Decided(_)));
    assert_eq!(report.backoffs, 3);
    let sleeps = em.clock.sleeps.lock().unwrap().clone();
    // 30 s doubled per failure, drawn from [half, full].
    assert!(sleeps[0] >= Duration::from_secs(30) && sleeps[0] <= Duration::from_secs(60));
    assert!(sleeps[2] >= Duration::from_secs(120) && sleeps[2] <= Duration::from_secs(240));
}

#[tokio::test]
async fn an_unchanged_issue_answers_304() {
    let em = Emulator::start().await;
    let client = em.client();
    let g = open(&client).await;
    let mut st = g.state;
    let first = client.poll(&mut st).await.unwrap();
    assert_eq!(first.not_modified, 0);
    let second = client.poll(&mut st).await.unwrap();
    assert_eq!((second.requests, second.not_modified), (2, 2));
    assert!(second.candidates.is_empty() && second.rejected.is_empty());
    let log = em.s().log.clone();
    assert!(log.iter().any(|l| l.contains("/comments?since=")));
}

#[tokio::test]
async fn a_second_page_of_comments_is_read() {
    let em = Emulator::start().await;
    let (report, _) = scenario(&em, |em, n, t| {
        for i in 0..130 {
            em.s().add_comment(n, APPROVER, &format!("note {i}"), t);
        }
        em.s().add_comment(n, APPROVER, "/approve", t + 1);
    })
    .await;
    let WaitOutcome::Decided(d) = &report.outcome else {
        panic!("no decision")
    };
    assert_eq!(d.signal.0, Outcome::Approved);
    assert_eq!(rejected(&report).len(), 130);
    assert!(em.s().log.iter().any(|l| l.contains("page=2")));
}

#[tokio::test]
async fn recheck_at_consumption_catches_edits_deletions_and_demotions() {
    let em = Emulator::start().await;
    em.person("dev", Some(("write", "write")));
    let client = em.client();
    let g = open(&client).await;
    let mut st = g.state;
    em.clock.advance(60);
    let id = em
        .s()
        .add_comment(g.issue.number, "dev", "/approve", em.now());
    let report = super::wait(&client, &em.clock, &mut st, &parse, &opts(600))
        .await
        .unwrap();
    let WaitOutcome::Decided(d) = report.outcome else {
        panic!()
    };
    assert!(
        client
            .recheck(&st, &d.candidate)
            .await
            .unwrap()
            .is_authorized()
    );
    em.s()
        .roles
        .insert("dev".into(), ("read".into(), "read".into()));
    assert_eq!(
        client.recheck(&st, &d.candidate).await.unwrap(),
        Verdict::Refused(RejectReason::Unauthorized {
            role: "read".into()
        })
    );
    em.s()
        .roles
        .insert("dev".into(), ("write".into(), "write".into()));
    em.s().edit_comment(id, "/approve", em.now() + 10);
    assert_eq!(
        client.recheck(&st, &d.candidate).await.unwrap(),
        Verdict::Refused(RejectReason::Edited)
    );
    em.s().comments.retain(|c| c.id != id);
    assert_eq!(
        client.recheck(&st, &d.candidate).await.unwrap(),
        Verdict::Refused(RejectReason::Retracted)
    );
}

#[tokio::test]
async fn a_comment_in_the_same_second_as_the_last_one_seen_is_not_skipped() {
    let em = Emulator::start().await;
    let client = em.client();
    let g = open(&client).await;
    let mut st = g.state;
    em.clock.advance(60);
    let t = em.now();
    em.s().add_comment(g.issue.number, APPROVER, "reading", t);
    let first = client.poll(&mut st).await.unwrap();
    assert_eq!(first.candidates.len(), 1);
    em.s().add_comment(g.issue.number, APPROVER, "/approve", t);
    let second = client.poll(&mut st).await.unwrap();
    assert_eq!(second.candidates.len(), 1, "{second:#?}");
    assert_eq!(
        second.candidates[0].content,
        CandidateContent::Comment("/approve".into())
    );
    let third = client.poll(&mut st).await.unwrap();
    assert!(third.candidates.is_empty() && third.rejected.is_empty());
}

#[tokio::test]
async fn x_poll_interval_lengthens_the_pause() {
    let em = Emulator::start().await;
    let client = em.client();
    let g = open(&client).await;
    let mut st = g.state;
    em.fault(
        "/comments",
        ResponseTemplate::new(200)
            .insert_header("x-poll-interval", "90")
            .insert_header("etag", "W/\"abc\"")
            .set_body_json(serde_json::json!([])),
    );
    super::wait(&client, &em.clock, &mut st, &parse, &opts(100))
        .await
        .unwrap();
    let sleeps = em.clock.sleeps.lock().unwrap().clone();
    assert_eq!(sleeps[0], Duration::from_secs(90), "{sleeps:?}");
}

#[tokio::test]
async fn a_success_with_no_requests_left_waits_for_the_reset() {
    let em = Emulator::start().await;
    let client = em.client();
    let g = open(&client).await;
    let mut st = g.state;
    let reset = em.now() + 600;
    em.fault(
        "/events",
        ResponseTemplate::new(200)
            .insert_header("x-ratelimit-remaining", "0")
            .insert_header("x-ratelimit-reset", reset.to_string().as_str())
            .insert_header("etag", "W/\"ev\"")
            .set_body_json(serde_json::json!([])),
    );
    super::wait(&client, &em.clock, &mut st, &parse, &opts(700))
        .await
        .unwrap();
    let sleeps = em.clock.sleeps.lock().unwrap().clone();
    assert!(sleeps[0] >= Duration::from_secs(599), "{sleeps:?}");
}

#[tokio::test]
async fn a_step_reports_without_looping_and_keeps_state_on_failure() {
    let em = Emulator::start().await;
    em.person("mallory", None);
    let client = em.client();
    let g = open(&client).await;
    let mut st = g.state;
    em.clock.advance(60);
    em.s()
        .add_comment(g.issue.number, "mallory", "/approve", em.now());
    em.s()
        .add_comment(g.issue.number, APPROVER, "/stop g-0001", em.now() + 1);
    // The permission check fails once: the step fails and the state does not move.
    em.fault("/permission", ResponseTemplate::new(502));
    let before = st.clone();
    let e = client.step(&mut st, &parse).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Delivery);
    assert!(e.is_retryable());
    assert_eq!(st, before);
    // The next step sees both comments again and decides.
    let step = client.step(&mut st, &parse).await.unwrap();
    let d = step.decision.unwrap();
    assert_eq!(d.signal.0, Outcome::Stopped);
    assert_eq!(d.candidate.actor.login, APPROVER);
    assert!(step.rejected.iter().any(|r| r.reason
        == RejectReason::Unauthorized {
            role: "none".into()
        }));
}

#[tokio::test]
async fn the_registered_approver_is_recognised_by_numeric_id_not_login() {
    let em = Emulator::start().await;
    let client = em.client();
    let g = open(&client).await;
    let approver_id = em.s().users[APPROVER].id;
    // The approver renamed their account (same id, new login, no repository role)...
    em.s().users.insert(
        "octo-renamed".into(),
        super::emulator::UserRec {
            login: "octo-renamed".into(),
            id: approver_id,
            kind: "User",
        },
    );
    // ...and someone else took over the old login (new id, no repository role).
    em.s().roles.remove(APPROVER);
    em.s().users.get_mut(APPROVER).unwrap().id = 777_777;
    let mut st = g.state;
    em.clock.advance(60);
    em.s()
        .add_comment(g.issue.number, APPROVER, "/approve", em.now());
    em.s()
        .add_comment(g.issue.number, "octo-renamed", "/stop", em.now() + 1);
    let report = super::wait(&client, &em.clock, &mut st, &parse, &opts(600))
        .await
        .unwrap();
    let WaitOutcome::Decided(d) = &report.outcome else {
        panic!("{report:#?}")
    };
    assert_eq!(d.candidate.actor.login, "octo-renamed");
    assert_eq!(d.signal.0, Outcome::Stopped);
    assert_eq!(
        reasons(&report),
        [RejectReason::Unauthorized {
            role: "none".into()
        }]
    );
}
