//! The state directory as a boundary, check-then-act, batches a crash cannot tear, tampering
//! that stays reported until acknowledged, bounds (issue 14).

use std::sync::Arc;

use squad_model::ChannelKind;
use squad_notify::*;

use crate::common::*;

fn outside_file(tmp: &tempfile::TempDir, text: &str) -> std::path::PathBuf {
    let p = tmp.path().join("outside.md");
    std::fs::write(&p, text).unwrap();
    p
}

#[tokio::test]
async fn a_symlinked_log_is_never_appended_to_and_status_reports_it() {
    let e = env();
    let outside_dir = tempfile::tempdir().unwrap();
    let outside = outside_file(&outside_dir, "my own notes\n");
    let missing = outside_dir.path().join("created-through-the-link.md");
    std::fs::create_dir_all(e.approvals.dir().root()).unwrap();
    for target in [&outside, &missing] {
        let link = e.approvals.dir().log_path();
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(target, &link).unwrap();
        let err = e.refused(Mode::Autopilot, Trigger::RiskGate).await;
        assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(e.phone.sent().is_empty(), "nothing sent before the check");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "my own notes\n");
        assert!(!missing.exists(), "the link's target was not created");
        let status = e.approvals.status().unwrap();
        assert!(matches!(status.log, LogStatus::Unusable { .. }));
        assert!(
            status
                .problems()
                .iter()
                .any(|p| p.contains("notifications.md") && p.contains("symbolic link")),
            "{:?}",
            status.problems()
        );
        assert!(!e.approvals.health().unwrap().is_healthy());
    }
    assert!(
        e.approvals
            .state()
            .unwrap()
            .approval
            .pending_gates
            .first()
            .cloned()
            .is_none(),
        "no gate was recorded"
    );
}

#[tokio::test]
async fn a_symlinked_state_file_or_directory_is_refused() {
    let e = env();
    let outside_dir = tempfile::tempdir().unwrap();
    let outside = outside_file(&outside_dir, "{}");
    std::fs::create_dir_all(e.approvals.dir().root()).unwrap();
    std::os::unix::fs::symlink(&outside, e.approvals.dir().state_path()).unwrap();
    let err = e
        .approvals
        .configure(squad_model::NotifySettings::default())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "{}");
    assert!(e.approvals.status().is_err());
    // A state directory whose own root is a link the user chose is fine.
    let real = tempfile::tempdir().unwrap();
    let root_link = outside_dir.path().join("squad-root");
    std::os::unix::fs::symlink(real.path(), &root_link).unwrap();
    let a = Approvals::new(StateDir::new(&root_link), clock());
    a.configure(squad_model::NotifySettings::default()).unwrap();
    assert!(real.path().join("state.json").exists());
}

#[tokio::test]
async fn a_corrupt_log_is_found_before_anyone_is_pinged() {
    let e = env();
    std::fs::create_dir_all(e.approvals.dir().root()).unwrap();
    std::fs::write(e.approvals.dir().log_path(), "not a squad log\n").unwrap();
    let err = e.refused(Mode::Autopilot, Trigger::RiskGate).await;
    assert!(
        matches!(err.kind(), ErrorKind::Tampered | ErrorKind::Corrupt),
        "{err}"
    );
    assert!(
        e.phone.sent().is_empty(),
        "no ping for a gate never recorded"
    );
    assert!(
        e.approvals
            .state()
            .unwrap()
            .approval
            .pending_gates
            .first()
            .cloned()
            .is_none()
    );
}

/// A channel that, while it notifies, replaces notifications.md with a symbolic link: the log
/// append after the send fails.
#[derive(Debug)]
struct Saboteur {
    dir: StateDir,
    saved: std::sync::Mutex<Option<Vec<u8>>>,
}

#[async_trait::async_trait]
impl ApprovalChannel for Saboteur {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Webhook
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            outbound: true,
            inbound: false,
        }
    }
    async fn notify(&self, _gate: &Gate) -> Result<Delivery> {
        let log = self.dir.log_path();
        *self.saved.lock().unwrap() = std::fs::read(&log).ok();
        let _ = std::fs::remove_file(&log);
        std::os::unix::fs::symlink("/dev/null", &log).unwrap();
        Ok(Delivery {
            channel: ChannelKind::Webhook,
            approval_ref: "webhook (outbound only)".into(),
            delivery_id: Some("d-1".into()),
            locator: None,
            attempts: 1,
        })
    }
    async fn poll(&self, _gate: &Gate) -> Result<Polled> {
        Ok(Polled::default())
    }
}

#[tokio::test]
async fn a_failure_after_the_send_keeps_the_gate_and_the_next_command_completes_the_log() {
    let e = env();
    let first = e.open(Mode::Autopilot, Trigger::ImpactfulAction).await;
    e.consume(
        &[gh("octocat", 583231, "/approve")],
        &rules(),
        &StaticAuthorizer::new(),
    )
    .await;
    let sab = Arc::new(Saboteur {
        dir: e.approvals.dir().clone(),
        saved: Default::default(),
    });
    let fan = FanOut::new().with(sab.clone());
    let err = e
        .approvals
        .request(&request(Mode::Autopilot, Trigger::RiskGate), None, 60, &fan)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    // The ping went out: the gate is recorded, with what was delivered.
    let doc = e.approvals.state().unwrap();
    let pending = doc.approval.pending_gates.first().cloned().clone().unwrap();
    assert_ne!(pending.id, first.id);
    assert_eq!(pending.deliveries[0].channel, ChannelKind::Webhook);
    assert!(doc.approval.batch.is_some(), "the unfinished log append");
    // Someone restores the log: the next command appends the entry; nothing reads as tampering.
    let log = e.approvals.dir().log_path();
    std::fs::remove_file(&log).unwrap();
    std::fs::write(&log, sab.saved.lock().unwrap().clone().unwrap()).unwrap();
    let health = e.approvals.health().unwrap();
    assert!(
        health.interrupted.is_some() && health.tamper.is_none(),
        "{health:?}"
    );
    let status = e.approvals.status().unwrap();
    assert!(status.tamper.is_none(), "{:?}", status.tamper);
    assert!(
        matches!(status.log, LogStatus::Intact { entries: 3, .. }),
        "{:?}",
        status.log
    );
    assert!(!status.repaired.is_empty());
    assert!(status.state.approval.batch.is_none());
    let text = e.log();
    assert!(text.contains(&format!("{} (run", pending.id)), "{text}");
    assert_eq!(text.matches("* Resolved: pending").count(), 2);
    assert!(e.approvals.health().unwrap().is_healthy());
}

#[tokio::test]
async fn a_notification_cut_short_is_recorded_as_interrupted() {
    let e = env();
    let g = e.open(Mode::Autopilot, Trigger::RiskGate).await;
    // What a process killed while notifying leaves: the gate, marked as being notified, and no
    // log entry for it.
    let mut doc = e.approvals.state().unwrap();
    let log = e.log();
    let marker = "below this line. -->\n";
    let cut = &log[..log.find(marker).unwrap() + marker.len()];
    std::fs::write(e.approvals.dir().log_path(), cut).unwrap();
    doc.approval.log_head = Some(log_head(cut).unwrap());
    doc.approval
        .pending_gates
        .first()
        .cloned()
        .as_mut()
        .unwrap()
        .deliveries
        .clear();
    doc.approval.batch = Some(Batch {
        op: "request".into(),
        log_len_before: cut.len() as u64,
        append: String::new(),
        notifying: Some(g.id.clone()),
    });
    let lock = store::lock(e.approvals.dir()).unwrap();
    store::write(e.approvals.dir(), &doc, &lock).unwrap();
    drop(lock);
    let h = e.approvals.health().unwrap();
    assert!(
        h.interrupted.as_deref().unwrap().contains("being notified"),
        "{h:?}"
    );
    assert!(h.tamper.is_none());
    let fixed = e.approvals.fix().unwrap();
    assert_eq!(fixed.completed.len(), 1, "{fixed:?}");
    assert!(fixed.health.is_healthy(), "{:?}", fixed.health);
    let text = e.log();
    assert!(text.contains("* Delivery: interrupted"), "{text}");
    assert!(text.contains(&g.id.to_string()));
    let st = e.approvals.status().unwrap();
    assert!(matches!(st.log, LogStatus::Intact { entries: 1, .. }));
    assert_eq!(
        st.state.approval.pending_gates.first().cloned().unwrap().id,
        g.id
    );
}

#[tokio::test]
async fn tampering_stays_reported_until_a_human_acknowledges_it() {
    let e = env();
    e.open(Mode::Autopilot, Trigger::ImpactfulAction).await;
    e.consume(
        &[gh("octocat", 583231, "/approve")],
        &rules(),
        &StaticAuthorizer::new(),
    )
    .await;
    // Delete the last entry.
    let log = e.log();
    let cut = &log[..log.rfind("\n### ").unwrap() + 1];
    std::fs::write(e.approvals.dir().log_path(), cut).unwrap();
    let st = e.approvals.status().unwrap();
    let t = st.tamper.clone().expect("detected");
    assert!(t.problem.contains("edited or cut"), "{}", t.problem);
    // A new gate is refused, and the detection stays (it used to be forgotten here).
    for _ in 0..2 {
        let err = e.refused(Mode::Autopilot, Trigger::RiskGate).await;
        assert_eq!(err.kind(), ErrorKind::Tampered, "{err}");
        assert!(e.phone.sent().len() == 1, "no ping for a refused gate");
        let st = e.approvals.status().unwrap();
        assert_eq!(st.tamper.as_ref(), Some(&t));
        assert!(st.lines().iter().any(|l| l.starts_with("log: TAMPERED")));
    }
    // Even restoring the file does not make it go away by itself.
    std::fs::write(e.approvals.dir().log_path(), &log).unwrap();
    assert_eq!(e.approvals.status().unwrap().tamper.as_ref(), Some(&t));
    std::fs::write(e.approvals.dir().log_path(), cut).unwrap();
    // A human acknowledges: an entry says who and when; gates can be requested again.
    e.clock.advance_seconds(60);
    let acked = e
        .approvals
        .acknowledge_tamper("Jane Doe <jane@example.com>")
        .unwrap();
    assert_eq!(acked.as_ref(), Some(&t));
    let text = e.log();
    assert!(text.starts_with(cut), "nothing rewritten");
    let added = &text[cut.len()..];
    assert!(
        added.starts_with("### 2027-01-15T08:01:00Z tamper-acknowledged\n"),
        "{added}"
    );
    assert!(
        added.contains("* By: Jane Doe <jane@example.com>"),
        "{added}"
    );
    assert!(
        added.contains(&format!("* Problem: {}", t.problem)),
        "{added}"
    );
    let st = e.approvals.status().unwrap();
    assert!(st.tamper.is_none());
    assert!(
        matches!(
            st.log,
            LogStatus::Intact {
                acknowledged: 2,
                ..
            }
        ),
        "{:?}",
        st.log
    );
    assert_eq!(
        e.approvals.acknowledge_tamper("again").unwrap(),
        None,
        "nothing left"
    );
    e.open(Mode::Autopilot, Trigger::RiskGate).await;
    assert!(matches!(
        e.approvals.status().unwrap().log,
        LogStatus::Intact { entries: 3, .. }
    ));
    // Changing what was acknowledged shows again.
    let text = e.log();
    let edited = text.replacen("* Mode: autopilot", "* Mode: interactive", 1);
    std::fs::write(e.approvals.dir().log_path(), edited).unwrap();
    assert!(e.approvals.status().unwrap().tamper.is_some());
}

#[tokio::test]
async fn a_log_without_its_marker_can_be_acknowledged() {
    let e = env();
    e.open(Mode::Autopilot, Trigger::RiskGate).await;
    let log = e.log();
    let broken = log.replace(
        "<!-- Append new notification entries below this line. -->",
        "",
    );
    std::fs::write(e.approvals.dir().log_path(), &broken).unwrap();
    assert!(e.approvals.status().unwrap().tamper.is_some());
    e.approvals.acknowledge_tamper("ops").unwrap().unwrap();
    let text = e.log();
    assert!(text.starts_with(&broken));
    let st = e.approvals.status().unwrap();
    assert!(
        st.tamper.is_none() && matches!(st.log, LogStatus::Intact { .. }),
        "{:?}",
        st.log
    );
    // A deleted log is tampering too, and can be acknowledged as well.
    std::fs::remove_file(e.approvals.dir().log_path()).unwrap();
    assert!(e.approvals.status().unwrap().tamper.is_some());
    e.approvals.acknowledge_tamper("ops").unwrap().unwrap();
    assert!(e.approvals.status().unwrap().tamper.is_none());
    assert_eq!(
        e.approvals.acknowledge_tamper(" ").unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
}

#[tokio::test]
async fn expiry_is_bounded_in_the_library_too() {
    let e = env();
    for secs in [0, MAX_EXPIRES_IN_SECS + 1, 300_000_000_000, u64::MAX] {
        let err = e
            .approvals
            .request(
                &request(Mode::Autopilot, Trigger::RiskGate),
                None,
                secs,
                &e.channels,
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{secs}");
        assert!(err.to_string().contains("31536000"), "{err}");
    }
    assert!(!e.approvals.dir().exists(), "nothing recorded");
    let req = request(Mode::Autopilot, Trigger::RiskGate);
    // At the end of the supported time range an expiry cannot be later than the opening.
    let end = squad_model::Timestamp::parse("9999-12-31T23:59:59Z").unwrap();
    let err = Gate::open(&req, RunId::generate(), end, 60).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let g = e
        .approvals
        .request(&req, None, MAX_EXPIRES_IN_SECS, &e.channels)
        .await
        .unwrap();
    let RequestOutcome::Opened { gate, .. } = g else {
        panic!()
    };
    assert!(gate.expires > gate.created);
}

#[test]
fn configure_refuses_secrets_without_repeating_them() {
    let e = env();
    for (handle, repo, email) in [
        ("https://hooks.slack.com/services/T/B/CANARY1", "o/r", ""),
        ("octocat", "http://user:CANARY2@example.com/o/r", ""),
        ("octocat", "o/r", "ghp_CANARY3abcdefabcdefabcdefabcdefab"),
        ("github_pat_CANARY4", "o/r", ""),
    ] {
        let settings = squad_model::NotifySettings {
            approval_channel: ChannelKind::GithubIssue,
            enabled: true,
            email: email.into(),
            github: Some(squad_model::GithubTarget {
                handle: handle.into(),
                repo: repo.into(),
                extra: Default::default(),
            }),
            trigger: None,
            extra: Default::default(),
        };
        let err = e.approvals.configure(settings).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(
            err.to_string().contains("looks like a URL or a token"),
            "{err}"
        );
        assert!(!format!("{err} {err:?}").contains("CANARY"), "{err:?}");
    }
    assert!(!e.approvals.dir().exists());
}
