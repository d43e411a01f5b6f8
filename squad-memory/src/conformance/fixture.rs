//! A deterministic fixture shaped like the upstream agent histories: 34-74 KB of `history.md`
//! plus `decisions.md` (the baseline a spawn loads upstream today), the same knowledge split
//! into hot / cold / wiki / archive tiers with stale and superseded facts, and per situation a
//! labelled set of facts the spawn must carry.
//!
//! Facts are marked with tokens (`FACT-...` required, `STALE-...` never to be loaded) so a
//! test checks recall and staleness by substring, without a model.

use std::fmt::Write as _;

use squad_model::{AgentName, Timestamp};

use crate::error::Result;
use crate::matrix::{LoadPlan, Situation};
use crate::name::TopicName;
use crate::store::{DocRef, MemoryStore};

/// One situation of the fixture: the plan to render and the facts it must carry.
#[derive(Debug, Clone)]
pub struct Case {
    /// The plan (situation, overrides, task text).
    pub plan: LoadPlan,
    /// Markers that must all appear in the rendered prompt (recall 1.0).
    pub required: Vec<&'static str>,
}

/// The generated fixture.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The agent (`picard`).
    pub agent: AgentName,
    /// The fixture's "now".
    pub now: Timestamp,
    /// The tiered memory files.
    pub files: Vec<(DocRef, String)>,
    /// The upstream baseline: `history.md` and `decisions.md`, loaded in full on every spawn.
    pub baseline: Vec<(&'static str, String)>,
    /// One case per situation.
    pub cases: Vec<Case>,
    /// Markers of stale or superseded facts: none may appear in any prompt.
    pub stale: Vec<&'static str>,
}

/// A small deterministic generator (64-bit LCG, seeded with its field), so the fixtures (this
/// one and [`super::realistic`]) are the same on every machine.
#[derive(Debug)]
pub(super) struct Lcg(pub(super) u64);

impl Lcg {
    pub(super) fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(self.0 >> 33).unwrap_or(0)
    }
    pub(super) fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.next() % xs.len()]
    }
    /// A date `YYYY-MM-DD` between 2025-06 and 2026-05.
    pub(super) fn date(&mut self) -> String {
        let month = 1 + self.next() % 12;
        let year = if month > 5 { 2025 } else { 2026 };
        format!("{year}-{month:02}-{:02}", 1 + self.next() % 28)
    }
}

const VERBS: &[&str] = &[
    "reviewed",
    "refactored",
    "renamed",
    "documented",
    "benchmarked",
    "profiled",
    "linted",
    "triaged",
    "paired on",
    "cleaned up",
];
const THINGS: &[&str] = &[
    "the ledger module",
    "invoice rendering",
    "the tax tables",
    "currency rounding",
    "the CSV exporter",
    "report pagination",
    "the admin dashboard",
    "audit log formatting",
    "the settings page",
    "customer search",
];
const DETAILS: &[&str] = &[
    "No behaviour change was intended and the tests stayed green.",
    "Left two follow-up comments for the owner of the module.",
    "The change is small; reviewers asked for a clearer commit message.",
    "Measured before and after; the difference is within noise.",
    "Split the work into three commits to ease review.",
];

fn ts(now: Timestamp, days_ago: i64, hour: i64) -> Timestamp {
    now.plus_seconds(-days_ago * 86_400 + hour * 3_600)
}

fn sem(out: &mut String, date: Timestamp, kind: &str, summary: &str, fields: &str, body: &str) {
    let _ = write!(
        out,
        "### {date}: {kind}: {summary}\n{fields}{body}\n\n---\n\n"
    );
}

fn noise(
    rng: &mut Lcg,
    out: &mut String,
    now: Timestamp,
    days_ago: i64,
    n: usize,
    id_prefix: Option<&str>,
) {
    for i in 0..n {
        let summary = format!(
            "{} {} (task {})",
            rng.pick(VERBS),
            rng.pick(THINGS),
            1000 + rng.next() % 9000
        );
        let body = format!("{} {}", rng.pick(DETAILS), rng.pick(DETAILS));
        let fields = match id_prefix {
            Some(p) => format!("**id:** {p}-{days_ago}-{i}\n"),
            None => String::new(),
        };
        sem(
            out,
            ts(now, days_ago, i as i64),
            "note",
            &summary,
            &fields,
            &body,
        );
    }
}

const HOT_TASK: &str = "FACT-HOT-TASK";
const HOT_DEC: &str = "FACT-HOT-DEC";
const HOT_BLOCK: &str = "FACT-HOT-BLOCK";
const COLD_RESUME: &str = "FACT-COLD-RESUME";
const COLD_DEBUG: &str = "FACT-COLD-DEBUG";
const WIKI_SPEC: &str = "FACT-WIKI-SPEC";
const WIKI_ONBOARD: &str = "FACT-WIKI-ONBOARD";

impl Fixture {
    /// The fixture. `now` is 2026-11-30T12:00:00Z.
    pub fn upstream_like() -> Result<Self> {
        let agent = AgentName::new("picard")?;
        let now: Timestamp = "2026-11-30T12:00:00Z".parse()?;
        let mut rng = Lcg(0x5eed);

        // Hot: the seed's five lines plus a few recent entries, one superseded.
        let mut hot = format!(
            "Current task: migrate the billing webhook to signed payloads ({HOT_TASK})\n\
             Active decisions: verify HMAC-SHA256 signatures on every webhook ({HOT_DEC})\n\
             Last actions: drafted the verifier; wrote failing tests; asked worf for the secret\n\
             Blockers: the staging signing secret is missing ({HOT_BLOCK})\n\
             Talking to: worf\n\n"
        );
        // Recent actions of this session, so the hot file sits in the seed's 2-4 KB range.
        for i in 0..8 {
            let summary = format!("session step {i}: {} {}", rng.pick(VERBS), rng.pick(THINGS));
            let body = rng.pick(DETAILS);
            sem(
                &mut hot,
                ts(now, 0, -11 + i),
                "action",
                &summary,
                &format!("**id:** hot-s{i}\n"),
                body,
            );
        }
        sem(
            &mut hot,
            ts(now, 0, -3),
            "action",
            "drafted the signature verifier",
            "**id:** hot-a1\n",
            "Constant-time compare; rejects missing headers.",
        );
        sem(
            &mut hot,
            ts(now, 0, -2),
            "decision",
            "reject unsigned webhooks with 400 (STALE-HOT-1)",
            "**id:** hot-d1\n**superseded_by:** hot-d2\n",
            "",
        );
        sem(
            &mut hot,
            ts(now, 0, -1),
            "decision",
            "reject unsigned webhooks with 401",
            "**id:** hot-d2\n",
            "401 tells the sender to fix credentials.",
        );

        // Cold: about a month of summarised sessions, mostly routine, with the facts that
        // resuming and debugging need, and superseded ones.
        let mut cold = String::new();
        for day in (1..30).rev() {
            noise(&mut rng, &mut cold, now, day, 3, Some("c"));
            if day == 12 {
                sem(
                    &mut cold,
                    ts(now, day, 5),
                    "note",
                    &format!(
                        "recurring flaky deploy timeout in staging traced to the DNS cache TTL; pin the resolver ({COLD_DEBUG})"
                    ),
                    "**id:** c-debug\n",
                    "Seen three times; each time the deploy timeout hit after a DNS change.",
                );
                sem(
                    &mut cold,
                    ts(now, day, 6),
                    "decision",
                    "sign webhooks with HS256 shared keys (STALE-COLD-1)",
                    "**id:** c-old-sig\n**superseded_by:** c-new-sig\n**topic:** webhooks\n",
                    "",
                );
            }
            if day == 4 {
                sem(
                    &mut cold,
                    ts(now, day, 7),
                    "decision",
                    "sign webhooks with HMAC-SHA256 over the raw body",
                    "**id:** c-new-sig\n**topic:** webhooks\n",
                    "",
                );
            }
            if day == 2 {
                sem(
                    &mut cold,
                    ts(now, day, 8),
                    "action",
                    &format!(
                        "paused midway through the webhook retry queue refactor; next step is dead-letter handling ({COLD_RESUME})"
                    ),
                    "**id:** c-resume\n",
                    "The retry queue branch is pushed; dead-letter handling is the open part.",
                );
            }
        }

        // Wiki: durable references.
        let mut webhooks =
            String::from("# Webhooks\n\nHow squad services sign and verify webhook payloads.\n\n");
        sem(
            &mut webhooks,
            ts(now, 200, 0),
            "contract",
            "webhook signature header is X-Hub-Signature with sha1 (STALE-WIKI-1)",
            "**id:** w-sig-old\n**superseded_by:** w-sig\n",
            "",
        );
        sem(
            &mut webhooks,
            ts(now, 90, 0),
            "contract",
            &format!(
                "webhook payloads are signed with HMAC-SHA256 over the raw body in header X-Squad-Signature ({WIKI_SPEC})"
            ),
            "**id:** w-sig\n",
            "Verify with a constant-time compare; reject on mismatch.",
        );
        sem(
            &mut webhooks,
            ts(now, 80, 0),
            "convention",
            "webhook handlers are idempotent by delivery id",
            "**id:** w-idem\n",
            "",
        );
        let mut deploy = String::from(
            "# Deploy pipeline\n\nEvery change goes through staging, then a canary, then production.\n\n",
        );
        sem(
            &mut deploy,
            ts(now, 120, 0),
            "convention",
            &format!(
                "deploys go through the staging canary for 30 minutes before production rollout ({WIKI_ONBOARD})"
            ),
            "**id:** dp-canary\n",
            "Roll back automatically when the canary error rate doubles.",
        );
        sem(
            &mut deploy,
            ts(now, 300, 0),
            "convention",
            "canary lasts 5 minutes (STALE-WIKI-2)",
            "**id:** dp-canary-old\n**superseded_by:** dp-canary\n",
            "",
        );
        let mut conventions = String::from("# Conventions\n\n");
        for i in 0..8 {
            let _ = writeln!(
                conventions,
                "- {} {} before merging (rule {i}).",
                rng.pick(VERBS),
                rng.pick(THINGS)
            );
        }

        // Archive: aged entries; searched with cold and loaded when relevant.
        let mut archive = String::new();
        sem(
            &mut archive,
            ts(now, 140, 0),
            "note",
            "old staging outage notes (ARCHIVED-1)",
            "**id:** a-1\n",
            "",
        );
        noise(&mut rng, &mut archive, now, 150, 10, Some("a"));

        // The upstream baseline: the whole history and every decision, stale ones included.
        let mut history =
            String::from("# picard history\n\n## Core Context\n\nBilling and webhooks owner.\n\n");
        for day in (1..90).rev() {
            noise(&mut rng, &mut history, now, day, 2, None);
        }
        history.push_str(&cold);
        history.push_str(&hot);
        let mut decisions = String::from("# decisions\n\n");
        for i in 0..45 {
            sem(
                &mut decisions,
                ts(now, 200 - i, 0),
                "decision",
                &format!(
                    "{} {} is owned by the billing team",
                    rng.pick(VERBS),
                    rng.pick(THINGS)
                ),
                "",
                &format!("{} {}", rng.pick(DETAILS), rng.pick(DETAILS)),
            );
        }
        decisions.push_str(&webhooks);
        decisions.push_str(&deploy);

        let t = |s: &str| TopicName::new(s);
        let hot_facts = [HOT_TASK, HOT_DEC, HOT_BLOCK];
        let with = |extra: &[&'static str]| -> Vec<&'static str> {
            hot_facts
                .iter()
                .copied()
                .chain(extra.iter().copied())
                .collect()
        };
        let cases = vec![
            Case {
                plan: LoadPlan::new(Situation::NewTask)
                    .task("migrate the billing webhook to signed payloads"),
                required: with(&[]),
            },
            Case {
                plan: LoadPlan::new(Situation::Resuming)
                    .task("resume the webhook retry queue refactor where it stopped"),
                required: with(&[COLD_RESUME]),
            },
            Case {
                plan: LoadPlan::new(Situation::Debugging)
                    .task("the staging deploy timeout is flaky again"),
                required: with(&[COLD_DEBUG]),
            },
            Case {
                plan: LoadPlan::new(Situation::ImplementingSpec)
                    .include_wiki(t("webhooks")?)
                    .task("implement signature verification per the webhook contract"),
                required: with(&[WIKI_SPEC]),
            },
            Case {
                plan: LoadPlan::new(Situation::Onboarding)
                    .task("get familiar with the deploy pipeline and the canary rollout"),
                required: with(&[WIKI_ONBOARD]),
            },
            Case {
                plan: LoadPlan::new(Situation::PostIncident)
                    .task("incident review: staging deploy timeout during canary, webhook signature failures"),
                required: with(&[COLD_DEBUG, WIKI_SPEC, WIKI_ONBOARD]),
            },
        ];
        let files = vec![
            (DocRef::Hot(agent.clone()), hot),
            (DocRef::Cold(agent.clone()), cold),
            (DocRef::Wiki(t("webhooks")?), webhooks),
            (DocRef::Wiki(t("deploy")?), deploy),
            (DocRef::Wiki(t("conventions")?), conventions),
            (DocRef::Archive(agent.clone()), archive),
        ];
        Ok(Self {
            agent,
            now,
            files,
            baseline: vec![("history.md", history), ("decisions.md", decisions)],
            cases,
            stale: vec![
                "STALE-HOT-1",
                "STALE-COLD-1",
                "STALE-WIKI-1",
                "STALE-WIKI-2",
            ],
        })
    }

    /// Writes the tier files into `store`.
    ///
    /// # Errors
    ///
    /// What the store's `write` returns.
    pub fn install(&self, store: &dyn MemoryStore) -> Result<()> {
        for (d, text) in &self.files {
            store.write(d, text)?;
        }
        Ok(())
    }

    /// What upstream puts in every spawn today: the full history and decisions, concatenated.
    pub fn baseline_prompt(&self) -> String {
        let mut s = String::new();
        for (name, text) in &self.baseline {
            let _ = write!(s, "## {name}\n{text}\n");
        }
        s
    }
}

/// A cold file of `n` routine entries (for ranking benchmarks), with one entry about a flaky
/// staging deploy timeout in the middle.
pub fn cold_with_entries(n: usize) -> Result<String> {
    let now: Timestamp = "2026-11-30T12:00:00Z".parse()?;
    let mut rng = Lcg(42);
    let mut out = String::new();
    for i in 0..n {
        if i == n / 2 {
            sem(
                &mut out,
                now.plus_seconds(-(i as i64) * 600),
                "note",
                "recurring flaky deploy timeout in staging",
                &format!("**id:** bench-{i}\n"),
                "DNS cache TTL.",
            );
            continue;
        }
        let summary = format!("{} {} (task {})", rng.pick(VERBS), rng.pick(THINGS), i);
        let body = rng.pick(DETAILS);
        sem(
            &mut out,
            now.plus_seconds(-(i as i64) * 600),
            "note",
            &summary,
            &format!("**id:** bench-{i}\n"),
            body,
        );
    }
    Ok(out)
}
