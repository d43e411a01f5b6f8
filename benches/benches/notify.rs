//! squad-notify: the Markdown-aware signal parser against the upstream watcher's plain prefix
//! test, log verification against a plain split, and the atomic state write (through the
//! state directory's boundary, squad-fs) against a plain write.
#![expect(clippy::unwrap_used, reason = "a broken fixture should stop the bench")]

use squad_notify::{LogEntry, log_head, parse_comment, verify_log};

fn main() {
    divan::main();
}

const COMMENTS: [&str; 6] = [
    "/approve",
    "> Squad approval needed: impactful-action — Deploy\n>\n> - Mode: autopilot\n\n/approve g-0123456789ab",
    "/changes: please split the migration into two steps and add a rollback test",
    "LGTM, but let me check the numbers first.\n\n```\n/approve\n```",
    "/approve-all",
    "Thanks! I'll look later today.",
];

/// The upstream watcher's grammar (trim, then ordered prefix tests): the baseline.
fn upstream_parse(body: &str) -> Option<&'static str> {
    let t = body.trim();
    if t.starts_with("/approve-all") {
        Some("approve-all")
    } else if t.starts_with("/approve") {
        Some("approve")
    } else if t.starts_with("/stop") {
        Some("stop")
    } else if t.starts_with("/changes:") {
        Some("changes")
    } else {
        None
    }
}

#[divan::bench]
fn parse_markdown_aware() -> usize {
    COMMENTS
        .iter()
        .filter(|c| parse_comment(divan::black_box(c)).command().is_some())
        .count()
}

#[divan::bench]
fn parse_upstream_prefix_baseline() -> usize {
    COMMENTS
        .iter()
        .filter(|c| upstream_parse(divan::black_box(c)).is_some())
        .count()
}

fn log_with(entries: usize) -> String {
    let mut text = squad_notify::LOG_HEADER.to_owned();
    for i in 0..entries {
        let e = LogEntry::new("2026-11-30T10:00:00Z".parse().unwrap(), "impactful-action")
            .field("Mode", "autopilot")
            .field("Channel", "in-chat")
            .field("Approval Ref", "in-chat")
            .field("Gate", &format!("g-{i:012x}"))
            .field("Topic", "Deploy the staging migration")
            .field("Awaiting", "approve the migration")
            .field("Resolved", "pending");
        let prev = log_head(&text).unwrap();
        text.push_str(&e.render(&prev));
    }
    text
}

#[divan::bench(args = [100, 1000])]
fn verify_hash_chain(b: divan::Bencher<'_, '_>, entries: usize) {
    let text = log_with(entries);
    b.bench(|| verify_log(divan::black_box(&text), None).unwrap().entries);
}

/// Reading the entries without checking anything: the baseline.
#[divan::bench(args = [100, 1000])]
fn split_entries_baseline(b: divan::Bencher<'_, '_>, entries: usize) {
    let text = log_with(entries);
    b.bench(|| {
        divan::black_box(&text)
            .lines()
            .filter(|l| l.starts_with("### "))
            .count()
    });
}

#[divan::bench(sample_count = 30)]
fn state_write_atomic(b: divan::Bencher<'_, '_>) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = squad_notify::StateDir::new(tmp.path());
    let lock = squad_notify::store::lock(&dir).unwrap();
    let mut doc = squad_notify::StateDoc::default();
    doc.other
        .insert("pad".into(), serde_json::Value::String("x".repeat(4000)));
    b.bench(|| squad_notify::store::write(&dir, &doc, &lock).unwrap());
}

/// `fs::write` without fsync or rename (can tear on a crash): the baseline.
#[divan::bench(sample_count = 30)]
fn state_write_plain_baseline(b: divan::Bencher<'_, '_>) {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("state.json");
    let body = vec![b'x'; 4096];
    b.bench(|| std::fs::write(&p, &body).unwrap());
}
