//! The closing figure: a day of polling an unchanged issue every 30 s.

use std::time::Duration;

use squad_notify::PacerOptions;

use super::emulator::{APPROVER, Emulator};
use super::{WaitOutcome, open, parse, wait};

#[tokio::test]
async fn a_day_of_polling_an_unchanged_issue_costs_almost_no_rate_limit() {
    let em = Emulator::start().await;
    let client = em.client();
    let g = open(&client).await;
    let mut st = g.state;
    let (requests_before, non_304_before) = {
        let s = em.s();
        (s.requests, s.non_304)
    };
    let report = wait(
        &client,
        &em.clock,
        &mut st,
        &parse,
        &PacerOptions {
            interval: Duration::from_secs(30),
            timeout: Some(Duration::from_secs(24 * 3600)),
            jitter_seed: Some(1),
            ..PacerOptions::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(report.outcome, WaitOutcome::TimedOut);
    let (requests, non_304) = {
        let s = em.s();
        (s.requests - requests_before, s.non_304 - non_304_before)
    };
    assert_eq!(report.polls, 2880);
    assert_eq!(requests, 2 * 2880);
    assert_eq!(requests, report.requests);
    let share = non_304 as f64 / requests as f64;
    println!(
        "24 h at 30 s: {} polls, {requests} requests, {non_304} non-304 answers = {:.3} % of requests count against the rate limit",
        report.polls,
        share * 100.0
    );
    assert!(share < 0.01, "share {share}");
    // The squad's own labelling at creation is the only event seen, once.
    assert_eq!(report.rejected.len(), 1);

    // The same loop still notices a decision at the end of the day.
    let n = st.issue;
    em.clock.advance(10);
    em.s().add_comment(n, APPROVER, "/approve", em.now());
    let report = wait(&client, &em.clock, &mut st, &parse, &super::opts(120))
        .await
        .unwrap();
    assert!(matches!(report.outcome, WaitOutcome::Decided(_)));
}
