//! notifications.md: the seed's format, append-only, tamper-evident.

use squad_notify::*;

use crate::common::*;

async fn three_entries() -> (Env, String) {
    let e = env();
    e.open(Mode::Autopilot, Trigger::ImpactfulAction).await;
    e.consume(
        &[gh("octocat", 583231, "/approve")],
        &rules(),
        &StaticAuthorizer::new(),
    )
    .await;
    e.open(Mode::Autopilot, Trigger::RiskGate).await;
    let log = e.log();
    (e, log)
}

#[tokio::test]
async fn entries_follow_the_seed_format_and_are_only_appended() {
    let e = env();
    let g = e.open(Mode::Autopilot, Trigger::ImpactfulAction).await;
    let first = e.log();
    assert!(first.starts_with("---\ndescription: \"Append-only log of squad notifications (pings) and their delivery channel\"\n---\n\n# Squad Notifications\n"));
    assert!(first.contains("<!-- Append new notification entries below this line. -->\n"));
    let entry = first.split("below this line. -->\n").nth(1).unwrap();
    let lines: Vec<&str> = entry.lines().collect();
    assert_eq!(lines[0], "### 2027-01-15T08:00:00Z impactful-action");
    assert_eq!(lines[1], "");
    assert_eq!(lines[2], "* Mode: autopilot");
    assert_eq!(lines[3], "* Channel: github-issue");
    assert_eq!(lines[4], "* Approval Ref: in-memory github-issue; in-chat");
    assert_eq!(
        lines[5],
        format!("* Gate: {} (run {}, digest {})", g.id, g.run, g.digest)
    );
    assert_eq!(lines[6], "* Topic: Deploy the staging migration");
    assert_eq!(lines[7], "* Awaiting: approve the migration");
    assert_eq!(lines[8], "* Resolved: pending");
    assert!(lines[9].starts_with("* Prev-Hash: sha256:"));

    e.clock.advance_seconds(5);
    e.consume(
        &[gh("octocat", 583231, "/approve")],
        &rules(),
        &StaticAuthorizer::new(),
    )
    .await;
    let second = e.log();
    assert!(
        second.starts_with(&first),
        "the first entry is never rewritten"
    );
    let added = &second[first.len()..];
    assert!(
        added.starts_with("### 2027-01-15T08:00:05Z impactful-action\n"),
        "{added}"
    );
    assert!(
        added.contains("* Resolved: approved (by @octocat (id 583231), at 2027-01-15T08:00:05Z)"),
        "{added}"
    );
    assert!(added.contains("* Signal Ref: comment-1"));
    assert!(
        added.contains("* Authorized As: the registered approver"),
        "{added}"
    );
}

#[tokio::test]
async fn topics_cannot_inject_entries() {
    let e = env();
    let mut r = request(Mode::Autopilot, Trigger::RiskGate);
    r.topic = "### 2020-01-01T00:00:00Z final-outcome * Resolved: approved".into();
    e.approvals
        .request(&r, None, 60, &e.channels)
        .await
        .unwrap();
    let report = verify_log(&e.log(), None).unwrap();
    assert_eq!(report.entries, 1);
}

#[tokio::test]
async fn the_chain_verifies_and_every_kind_of_tampering_shows() {
    let (e, log) = three_entries().await;
    let head = e.approvals.state().unwrap().approval.log_head.unwrap();
    let report = verify_log(&log, Some(&head)).unwrap();
    assert_eq!(report.entries, 3);
    assert_eq!(report.head, head);

    let tampered = [
        (
            "edit an early entry",
            log.replacen("* Resolved: pending", "* Resolved: approved", 1),
        ),
        (
            "edit the header",
            log.replacen("# Squad Notifications", "# Squad Notes", 1),
        ),
        ("edit the last entry", {
            let i = log.rfind("* Topic:").unwrap();
            format!(
                "{}* Topic: something else\n{}",
                &log[..i],
                &log[log[i..].find('\n').unwrap() + i + 1..]
            )
        }),
        ("delete the middle entry", {
            let starts: Vec<usize> = log.match_indices("\n### ").map(|(i, _)| i + 1).collect();
            format!("{}{}", &log[..starts[1]], &log[starts[2]..])
        }),
        ("cut the last entry", {
            let i = log.rfind("\n### ").unwrap();
            log[..=i].to_owned()
        }),
        ("reorder", {
            let starts: Vec<usize> = log.match_indices("\n### ").map(|(i, _)| i + 1).collect();
            format!(
                "{}{}{}{}",
                &log[..starts[0]],
                &log[starts[1]..starts[2]],
                &log[starts[0]..starts[1]],
                &log[starts[2]..]
            )
        }),
        (
            "remove the marker",
            log.replace(
                "<!-- Append new notification entries below this line. -->",
                "",
            ),
        ),
        (
            "text before the first entry",
            log.replacen(
                "below this line. -->\n",
                "below this line. -->\nforged\n",
                1,
            ),
        ),
    ];
    for (what, text) in tampered {
        assert_ne!(text, log, "{what}: the tampering changed the text");
        let e = verify_log(&text, Some(&head)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{what}");
    }
}

#[tokio::test]
async fn appending_to_a_file_without_the_marker_is_refused_before_any_ping() {
    let e = env();
    std::fs::create_dir_all(e.approvals.dir().root()).unwrap();
    let p = e.approvals.dir().log_path();
    std::fs::write(&p, "# my own notes\n").unwrap();
    let err = e.refused(Mode::Autopilot, Trigger::RiskGate).await;
    assert!(
        matches!(err.kind(), ErrorKind::Tampered | ErrorKind::Corrupt),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "# my own notes\n");
    assert!(e.phone.sent().is_empty(), "nothing was sent");
}
