//! The happy paths at the client level: open, decide, resolve, resume.

use squad_model::Timestamp;
use squad_notify::github::{AuthorizedAs, GithubConfig, Outcome, PollState, Resolution};

use super::emulator::{APPROVER, Emulator, OWNER, REPO, SQUAD};
use super::{WaitOutcome, open, opts, parse, payload};

/// Opens a gate, lets `who` post `comment` a minute later, waits, checks again and resolves.
async fn decide_by_comment(comment: &str, who: &str) -> (Emulator, u64, Outcome, Option<String>) {
    let em = Emulator::start().await;
    em.person("dev", Some(("write", "write")));
    let client = em.client();
    let g = open(&client).await;
    let mut st = g.state;
    let n = g.issue.number;
    em.clock.advance(60);
    em.s().add_comment(n, who, comment, em.now());
    let report = super::wait(&client, &em.clock, &mut st, &parse, &opts(600))
        .await
        .unwrap();
    let WaitOutcome::Decided(d) = report.outcome else {
        panic!("{report:#?}")
    };
    assert!(
        client
            .recheck(&st, &d.candidate)
            .await
            .unwrap()
            .is_authorized()
    );
    let (outcome, note) = d.signal;
    client
        .resolve(
            n,
            &Resolution {
                gate_id: st.gate_id.clone(),
                outcome,
                by: d.candidate.actor.login.clone(),
                at: Timestamp::from_unix_seconds(em.now()).unwrap(),
                note: note.clone(),
            },
        )
        .await
        .unwrap();
    (em, n, outcome, note)
}

#[tokio::test]
async fn opening_a_gate_creates_the_issue_as_specified() {
    let em = Emulator::start().await;
    let client = em.client();
    let g = open(&client).await;
    assert!(!g.reused);
    let issue = em.s().issue(g.issue.number);
    assert_eq!(
        issue.title,
        "Squad approval needed: impactful-action — Deploy the billing service"
    );
    assert_eq!(issue.labels, ["squad-approval"]);
    assert_eq!(issue.assignees, [APPROVER]);
    assert_eq!(issue.user, SQUAD);
    for needle in [
        "<!-- squad-run: run-1 -->",
        "@octocat",
        "- Mode: autopilot",
        "- Trigger: impactful-action",
        "- Topic: Deploy the billing service",
        "- Awaiting: Approve the production deploy",
        "- Detail: All checks pass.",
        "  The deploy runs the schema migration.",
        "## How to respond",
        "- Gate: g-0001",
        "- Digest: sha256-1c9e77",
        "- Approver: @octocat",
    ] {
        assert!(
            issue.body.contains(needle),
            "missing {needle:?} in\n{}",
            issue.body
        );
    }
    assert_eq!(g.issue.gate.gate_id, "g-0001");
    assert_eq!(g.state.approver_id, Some(em.s().users[APPROVER].id));
    assert_eq!(
        g.state.gate_opened_at,
        Timestamp::from_unix_seconds(issue.created).unwrap()
    );
    // Opening the same run's next gate reuses the issue and pings again.
    em.clock.advance(300);
    let next = client
        .open_gate("run-1", "g-0002", "sha256-2", &payload())
        .await
        .unwrap();
    assert!(next.reused);
    assert_eq!(next.issue.number, g.issue.number);
    let comments = em.s().comments_on(g.issue.number);
    assert!(comments.last().unwrap().body.contains("@octocat"));
    // Another run gets its own issue.
    let other = client
        .open_gate("run-2", "g-0003", "sha256-3", &payload())
        .await
        .unwrap();
    assert_ne!(other.issue.number, g.issue.number);
}

#[tokio::test]
async fn an_approver_who_cannot_be_assigned_is_still_mentioned() {
    let em = Emulator::start().await;
    em.person("outsider", None);
    let client = em.client_with(GithubConfig::new(&format!("{OWNER}/{REPO}"), "outsider").unwrap());
    let g = open(&client).await;
    let issue = em.s().issue(g.issue.number);
    assert!(issue.assignees.is_empty());
    assert!(issue.body.contains("@outsider:"));
    // Reusing the issue for the next gate works the same way.
    em.clock.advance(60);
    let next = client
        .open_gate("run-1", "g-0002", "sha256-2", &payload())
        .await
        .unwrap();
    assert!(next.reused);
    assert_eq!(next.issue.gate.gate_id, "g-0002");
}

#[tokio::test]
async fn approve_closes_the_issue() {
    let (em, n, outcome, _) = decide_by_comment("/approve", APPROVER).await;
    assert_eq!(outcome, Outcome::Approved);
    let issue = em.s().issue(n);
    assert_eq!(
        (issue.state.as_str(), issue.state_reason.as_deref()),
        ("closed", Some("completed"))
    );
    let last = em.s().comments_on(n).last().unwrap().body.clone();
    assert!(
        last.contains("Gate `g-0001` resolved: **approved** by @octocat"),
        "{last}"
    );
    // Four writes: the issue's creation, then the three of the resolution.
    let writes = em.s().write_times.len();
    assert_eq!(writes, 4, "{:?}", em.s().log);
}

/// Writes are spaced apart on the real clock, as GitHub advises against secondary rate limits
/// (a second by default; a tenth of a second here, to keep the test short).
#[tokio::test]
async fn writes_are_spaced_apart() {
    let em = Emulator::start().await;
    let spacing = std::time::Duration::from_millis(100);
    let client = em.client().with_write_spacing(spacing);
    let g = open(&client).await;
    let resolution = Resolution {
        gate_id: "g-0001".into(),
        outcome: Outcome::Approved,
        by: APPROVER.into(),
        at: Timestamp::from_unix_seconds(em.now()).unwrap(),
        note: None,
    };
    client.resolve(g.issue.number, &resolution).await.unwrap();
    let times = em.s().write_times.clone();
    assert_eq!(times.len(), 4);
    for w in times.windows(2) {
        assert!(w[1] - w[0] >= spacing, "{times:?}");
    }
}

#[tokio::test]
async fn approve_all_from_a_write_collaborator_closes_the_issue() {
    let (em, n, outcome, _) = decide_by_comment("/approve-all g-0001", "dev").await;
    assert_eq!(outcome, Outcome::ApproveAll);
    assert_eq!(em.s().issue(n).state, "closed");
    let last = em.s().comments_on(n).last().unwrap().body.clone();
    assert!(last.contains("**approve-all** by @dev"), "{last}");
}

#[tokio::test]
async fn changes_keep_the_issue_open_relabelled_with_the_note_quoted() {
    let (em, n, outcome, note) =
        decide_by_comment("/changes: use a canary first, ping @team", APPROVER).await;
    assert_eq!(outcome, Outcome::ChangesRequested);
    assert_eq!(note.as_deref(), Some("use a canary first, ping @team"));
    let issue = em.s().issue(n);
    assert_eq!(issue.state, "open");
    assert_eq!(issue.labels, ["squad-approval", "squad/changes-requested"]);
    let last = em.s().comments_on(n).last().unwrap().body.clone();
    assert!(last.contains("> use a canary first"), "{last}");
    assert!(
        !last.contains("@team"),
        "the note must not mention anyone: {last}"
    );
}

#[tokio::test]
async fn stop_closes_the_issue_as_not_planned() {
    let (em, n, outcome, _) = decide_by_comment("/stop", APPROVER).await;
    assert_eq!(outcome, Outcome::Stopped);
    let issue = em.s().issue(n);
    assert_eq!(issue.state_reason.as_deref(), Some("not_planned"));
}

#[tokio::test]
async fn a_label_from_the_approver_decides() {
    let em = Emulator::start().await;
    let client = em.client();
    let g = open(&client).await;
    let mut st = g.state;
    em.clock.advance(60);
    em.s()
        .add_label(g.issue.number, APPROVER, "squad/approve-all", em.now());
    let report = super::wait(&client, &em.clock, &mut st, &parse, &opts(600))
        .await
        .unwrap();
    let WaitOutcome::Decided(d) = report.outcome else {
        panic!("{report:#?}")
    };
    assert_eq!(d.signal.0, Outcome::ApproveAll);
    assert_eq!(d.authorized_as, AuthorizedAs::RegisteredApprover);
    assert!(
        client
            .recheck(&st, &d.candidate)
            .await
            .unwrap()
            .is_authorized()
    );
}

#[tokio::test]
async fn a_fresh_process_resumes_on_the_same_issue_and_gate() {
    let em = Emulator::start().await;
    let saved = {
        let client = em.client();
        let g = open(&client).await;
        let mut st = g.state;
        let report = super::wait(&client, &em.clock, &mut st, &parse, &opts(120))
            .await
            .unwrap();
        assert_eq!(report.outcome, WaitOutcome::TimedOut);
        serde_json::to_string(&st).unwrap()
    };
    // The process dies; a new one starts from state.json.
    let mut st: PollState = serde_json::from_str(&saved).unwrap();
    let client = em.client();
    let issue = client.resume(&st).await.unwrap();
    assert_eq!(issue.gate.gate_id, st.gate_id);
    let before = em.s().non_304;
    let first = client.poll(&mut st).await.unwrap();
    assert_eq!(first.not_modified, 2, "the stored ETags still hold");
    assert_eq!(em.s().non_304, before);
    let n = st.issue;
    em.clock.advance(30);
    em.s().add_comment(n, APPROVER, "/approve g-0001", em.now());
    let report = super::wait(&client, &em.clock, &mut st, &parse, &opts(600))
        .await
        .unwrap();
    let WaitOutcome::Decided(d) = report.outcome else {
        panic!("{report:#?}")
    };
    assert_eq!(d.signal.0, Outcome::Approved);
}

#[tokio::test]
async fn identity_comes_from_get_user_when_not_configured() {
    let em = Emulator::start().await;
    let config = GithubConfig::new(&format!("{OWNER}/{REPO}"), APPROVER)
        .unwrap()
        .with_api_base(&em.server.uri())
        .unwrap();
    let client = squad_notify::github::GithubClient::new(
        config,
        squad_notify::github::Token::new(super::emulator::TOKEN.into()).unwrap(),
    )
    .unwrap();
    let me = client.identity().await.unwrap();
    assert_eq!(me.login, SQUAD);
    assert_eq!(me.id, Some(em.s().users[SQUAD].id));
}

#[tokio::test]
async fn an_enterprise_base_path_is_kept() {
    let em = Emulator::start().await;
    let config = GithubConfig::new(&format!("{OWNER}/{REPO}"), APPROVER)
        .unwrap()
        .with_own_login(SQUAD)
        .unwrap()
        .with_api_base(&format!("{}/api/v3", em.server.uri()))
        .unwrap();
    let client = squad_notify::github::GithubClient::new(
        config,
        squad_notify::github::Token::new(super::emulator::TOKEN.into()).unwrap(),
    )
    .unwrap()
    .with_clock(std::sync::Arc::new(em.clock.clone()));
    let g = open(&client).await;
    let mut st = g.state;
    em.clock.advance(60);
    for i in 0..120 {
        em.s()
            .add_comment(g.issue.number, APPROVER, &format!("n{i}"), em.now());
    }
    em.s()
        .add_comment(g.issue.number, APPROVER, "/approve", em.now() + 1);
    let report = super::wait(&client, &em.clock, &mut st, &parse, &opts(600))
        .await
        .unwrap();
    assert!(matches!(report.outcome, WaitOutcome::Decided(_)));
    let log = em.s().log.clone();
    assert!(log.iter().all(|l| l.contains("/api/v3/")), "{log:#?}");
    assert!(log.iter().any(|l| l.contains("page=2")));
}

#[tokio::test]
async fn resuming_a_superseded_gate_is_refused() {
    let em = Emulator::start().await;
    let client = em.client();
    let g = open(&client).await;
    em.clock.advance(60);
    client
        .open_gate("run-1", "g-0002", "sha256-2", &payload())
        .await
        .unwrap();
    let e = client.resume(&g.state).await.unwrap_err();
    assert_eq!(e.kind(), squad_notify::ErrorKind::Superseded);
    assert!(
        e.to_string().contains("shows gate g-0002, not g-0001"),
        "{e}"
    );
}
