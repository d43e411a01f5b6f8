//! The shapes of issue 24: hand-written histories from squads nobody here wrote.

use squad_memory::{
    DocRef, ExtractiveSummarizer, ImportOptions, ImportSource, ImportTarget, InMemoryStore,
    MemoryStore, Scribe, ScribeConfig, Tier, import,
};

use crate::{agent, at};

fn all_text(store: &dyn MemoryStore) -> String {
    let mut all = String::new();
    for tier in Tier::ALL {
        for name in store.list(tier).unwrap() {
            all.push_str(
                &store
                    .read(&DocRef::new(tier, &name).unwrap())
                    .unwrap()
                    .unwrap(),
            );
            all.push('\n');
        }
    }
    all
}

fn assert_every_line_kept(input: &str, store: &dyn MemoryStore) {
    let all = all_text(store);
    let kept: std::collections::HashSet<&str> = all.lines().map(str::trim).collect();
    for l in input.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let l = l.trim_start_matches('#').trim();
        assert!(
            kept.iter().any(|k| k.trim_start_matches('#').trim() == l),
            "lost {l:?}:\n{all}"
        );
    }
}

/// A `##` heading with no body, directly followed by a `##` heading that repeats an earlier one.
const BODILESS_REPEAT: &str = "# WORF\n\n## Learnings\n\n### Retry budget\n- three tries, then page\n\n## Open questions\n## Learnings\n\n### Queue depth alarm\n- alarm at 500 messages\n";

#[test]
fn a_bodiless_heading_before_a_repeated_heading_goes_through_the_scribe_from_hot() {
    let store = InMemoryStore::new();
    let who = agent("worf");
    store
        .write(&DocRef::Hot(who.clone()), BODILESS_REPEAT)
        .unwrap();
    let scribe = Scribe::new(&store, &ExtractiveSummarizer, ScribeConfig::default());
    scribe.run(&who, at("2026-11-30T12:00:00Z")).unwrap();
    assert_every_line_kept(BODILESS_REPEAT, &store);
    scribe.run(&who, at("2026-12-30T12:00:00Z")).unwrap();
    assert_every_line_kept(BODILESS_REPEAT, &store);
}

#[test]
fn a_bodiless_heading_before_a_repeated_heading_goes_through_the_scribe_after_import() {
    let store = InMemoryStore::new();
    let who = agent("worf");
    let src = ImportSource {
        name: "history.md".into(),
        text: BODILESS_REPEAT.into(),
    };
    squad_memory::import(
        &store,
        &ImportTarget::Agent(who.clone()),
        &[src],
        &ImportOptions::new(at("2026-11-01T00:00:00Z")),
    )
    .unwrap();
    let scribe = Scribe::new(&store, &ExtractiveSummarizer, ScribeConfig::default());
    scribe.run(&who, at("2026-11-30T12:00:00Z")).unwrap();
    scribe.run(&who, at("2027-03-30T12:00:00Z")).unwrap();
    assert_every_line_kept(BODILESS_REPEAT, &store);
}

/// Dated headings at levels other than `###`, in free text and inside an entry.
const DATED_LEVELS: &str = "# RIKER\n\n## Learnings\n\n### Canary rollout\n- five percent first\n#### 2026-03-03 follow-up inside the entry\n- stays in the canary entry\n\n## 2026-04-01 Deploy timeout\n- the deploy job timed out after 20 minutes\n- raised the runner timeout to 45 minutes\n\n## Runbook notes\nFree text under an undated heading.\n\n#### 2026-04-09: Cache warmer stalls\n- the warmer waits on a lock nobody holds\n\n# 2026-05-02 Quarter review\nShipped three releases.\n";

#[test]
fn dated_headings_of_any_level_are_entries_with_ids() {
    let store = InMemoryStore::new();
    let who = agent("riker");
    let src = ImportSource {
        name: "history.md".into(),
        text: DATED_LEVELS.into(),
    };
    let r = squad_memory::import(
        &store,
        &ImportTarget::Agent(who.clone()),
        &[src],
        &ImportOptions::new(at("2026-11-01T00:00:00Z")),
    )
    .unwrap();
    assert_eq!(r.lines_in, r.lines_stored);
    assert_eq!(r.entries, 4, "{r:?}");
    let hits = squad_memory::search(&store, &who, "deploy timeout", &[], 5).unwrap();
    let top = &hits[0];
    assert_eq!(top.title, "2026-04-01 Deploy timeout");
    let id = top
        .id
        .clone()
        .expect("a dated ## heading is an entry with an id");
    let found = squad_memory::show(&store, &id.parse().unwrap()).unwrap();
    assert_eq!(
        found.entry.date.unwrap().to_string(),
        "2026-04-01T00:00:00Z"
    );
    assert!(found.entry.body.contains("45 minutes"));
    for (q, heading) in [
        ("cache warmer lock", "2026-04-09: Cache warmer stalls"),
        ("quarter review releases", "2026-05-02 Quarter review"),
    ] {
        let hits = squad_memory::search(&store, &who, q, &[], 1).unwrap();
        assert_eq!(hits[0].title, heading);
        assert!(hits[0].id.is_some(), "{q}: {hits:?}");
    }
    // Inside an entry, a dated `####` heading is part of its body.
    let hits = squad_memory::search(&store, &who, "canary follow-up", &[], 1).unwrap();
    assert_eq!(hits[0].title, "Canary rollout");
    // Written back at their own level, and a second import changes nothing.
    let cold = store.read(&DocRef::Cold(who.clone())).unwrap().unwrap();
    assert!(cold.contains("\n## 2026-04-01 Deploy timeout\n"), "{cold}");
    assert!(
        cold.contains("\n#### 2026-04-09: Cache warmer stalls\n"),
        "{cold}"
    );
    let src = ImportSource {
        name: "history.md".into(),
        text: DATED_LEVELS.into(),
    };
    let again = squad_memory::import(
        &store,
        &ImportTarget::Agent(who.clone()),
        &[src],
        &ImportOptions::new(at("2026-11-02T00:00:00Z")),
    )
    .unwrap();
    assert_eq!((again.added, again.merged), (0, 4));
    assert_eq!(store.read(&DocRef::Cold(who)).unwrap().unwrap(), cold);
}

/// Sections naming products and packages as identifiers, and one that only shares common words.
const COMPOUNDS: [&str; 7] = [
    "Retries in BlobStorageClient\nThe upload retried forever: BlobStorageClient had no retry cap.",
    "Contoso.Extensions.Http pinned\nWe pin Contoso.Extensions.Http to 4.2 because 4.3 drops proxies.",
    "EventGrid subscription lag\nThe EventGrid subscription lagged ten minutes behind the topic.",
    "EG dead letters\nEG dead-lettered 40 messages during the outage.",
    "Renamed the queue-depth-alarm\nThe queue-depth-alarm pages at 500 messages now.",
    "retry_budget_ms is per call\nretry_budget_ms counts per call, not per request.",
    "Client storage notes\nThe storage client was slow and the client kept storage open; event handlers and grid layouts.",
];

#[test]
fn compound_names_match_their_words_and_acronyms_weigh_less() {
    let idx = squad_memory::Bm25::new(COMPOUNDS);
    let top = |q: &str| idx.rank(q).first().map(|r| r.0);
    // Separate words against one identifier, of every shape.
    assert_eq!(
        top("why did the Blob Storage Client retry forever"),
        Some(0)
    );
    assert_eq!(
        top("which contoso extensions http version is pinned"),
        Some(1)
    );
    assert_eq!(top("Event Grid subscription lag"), Some(2));
    assert_eq!(top("when does the queue depth alarm page"), Some(4));
    assert_eq!(top("is the retry budget ms per call"), Some(5));
    // And one identifier against its parts written apart.
    let idx2 = squad_memory::Bm25::new(["the blob storage client had no retry cap", "lunch menu"]);
    assert_eq!(idx2.rank("BlobStorageClient retries")[0].0, 0);
    // A part of a camelCase word counts on its own.
    assert_eq!(top("storage client retry cap"), Some(0));
    // An acronym of the query's phrase counts, but less than the phrase's words.
    let scores = idx.scores("Event Grid dead letters");
    assert!(scores[3] > 0.0, "EG is Event Grid: {scores:?}");
    let acro =
        squad_memory::Bm25::new(["EG outage", "EventGrid outage"]).scores("Event Grid outage");
    assert!(acro[1] > acro[0] && acro[0] > 0.0, "{acro:?}");
}

#[test]
fn compound_names_are_found_by_search() {
    let store = InMemoryStore::new();
    let who = agent("data");
    let mut cold = String::from("# DATA\n\n## Learnings\n\n");
    for s in COMPOUNDS {
        let (h, b) = s.split_once('\n').unwrap();
        cold.push_str(&format!("### {h}\n{b}\n\n"));
    }
    store.write(&DocRef::Cold(who.clone()), &cold).unwrap();
    let hits = squad_memory::search(&store, &who, "Blob Storage Client retry", &[], 3).unwrap();
    assert_eq!(hits[0].title, "Retries in BlobStorageClient", "{hits:?}");
    let hits = squad_memory::search(&store, &who, "contoso extensions http pin", &[], 3).unwrap();
    assert_eq!(hits[0].title, "Contoso.Extensions.Http pinned", "{hits:?}");
}

#[test]
fn a_heading_of_any_level_starts_its_own_part() {
    use squad_memory::{Budget, LoadPlan, Situation, Touch, spawn};
    let store = InMemoryStore::new();
    let who = agent("data");
    let filler = "- the nightly job ran and the dashboards stayed green every day\n".repeat(9);
    let cold = format!(
        "### Release train notes\n**id:** train\n{filler}#### Rollback drill\n- the rollback took 4 minutes on the canary ring\n#### Freeze window\n- no merges after Thursday noon\n{filler}---\n"
    );
    store.write(&DocRef::Cold(who.clone()), &cold).unwrap();
    let plan = LoadPlan::new(Situation::Debugging).task("how long did the rollback drill take");
    let out = spawn(&store, &who, &plan, &Budget::default(), Touch::No).unwrap();
    let loaded: Vec<&str> = out
        .manifest
        .loaded
        .iter()
        .map(|l| l.item.as_str())
        .collect();
    assert_eq!(loaded, ["train (part 2 of 3)"]);
    // The part that answers starts at its own heading and holds nothing of the filler before it
    // nor of the next `####` section.
    let start = out
        .prompt
        .find("#### Release train notes (part")
        .expect(&out.prompt);
    let part = &out.prompt[start..];
    let body = part.split_once('\n').unwrap().1;
    assert!(body.starts_with("#### Rollback drill\n"), "{part}");
    assert!(!part.contains("Freeze window"), "{part}");
    assert!(!part.contains("nightly job"), "{part}");
}

/// A long `###` section (offered in parts) followed by a `##` section whose heading is
/// indented (CommonMark reads up to three spaces before `#` as a heading).
fn long_section_then_indented_group() -> String {
    let mut s = String::from("# HIST\n\n## Learnings\n\n### 2026-01-02: Retry budget work\n");
    for i in 0..8 {
        s.push_str(&format!(
            "Paragraph {i} about the retry budget and the circuit breaker, with jitter and enough \
             words to make the line long.\nSecond line of paragraph {i} on the canary rollout.\n\n"
        ));
    }
    s.push_str("  ## Deploy pipeline\n\nThe staging deploy uses blue-green switching.\n\n");
    s.push_str(" ### 2026-02-03: Other\nBody.\n");
    s
}

#[test]
fn an_indented_heading_after_a_long_section_starts_its_own_unit() {
    use squad_memory::{Budget, LoadPlan, MemoryDoc, Situation, Touch, spawn};
    let store = InMemoryStore::new();
    let who = agent("data");
    let text = long_section_then_indented_group();
    let src = ImportSource {
        name: "history.md".into(),
        text,
    };
    let options = ImportOptions::new(at("2026-11-30T00:00:00Z"));
    import(&store, &ImportTarget::Agent(who.clone()), &[src], &options).unwrap();
    // Import: the `##` section is free text of its own, not the end of the entry above it.
    let cold = store.read(&DocRef::Cold(who.clone())).unwrap().unwrap();
    let doc = MemoryDoc::parse("cold/data.md", &cold).unwrap();
    let long = doc.entries().next().unwrap();
    assert!(!long.body.contains("Deploy pipeline"), "{cold}");
    assert!(!long.body.contains("blue-green"), "{cold}");
    let other = doc.entries().nth(1).unwrap();
    assert_eq!(other.group.as_deref(), Some("Deploy pipeline"), "{cold}");
    // Render: the section that answers loads alone, not as a part of the long entry.
    let plan = LoadPlan::new(Situation::Debugging).task("does the staging deploy use blue-green");
    let out = spawn(&store, &who, &plan, &Budget::default(), Touch::No).unwrap();
    let loaded: Vec<(&str, &str)> = out
        .manifest
        .loaded
        .iter()
        .map(|l| (l.item.as_str(), l.title.as_str()))
        .collect();
    assert_eq!(loaded.len(), 1, "{loaded:?}");
    assert_eq!(loaded[0].1, "Deploy pipeline", "{loaded:?}");
    assert!(!out.prompt.contains("Retry budget"), "{}", out.prompt);
}

/// A cold file where ten sections share a question's common words, one long section repeats
/// them all, and the answer shares only the question's rare word.
fn common_words_trap() -> String {
    let mut cold = String::from("# DATA\n\n## Learnings\n\n");
    cold.push_str("### Release tests handbook\n");
    for i in 0..30 {
        cold.push_str(&format!(
            "- Step {i}: the release tests fail when the release branch is stale; rerun the release tests.\n"
        ));
    }
    cold.push('\n');
    for i in 0..14 {
        cold.push_str(&format!(
            "### Release {i} notes\n- The release tests were green and the release shipped on day {i}.\n- Tests fail rarely on this release.\n\n"
        ));
    }
    let topics = [
        "lunch menu",
        "office plants",
        "parking rules",
        "desk booking",
        "coffee machine",
    ];
    for i in 0..200 {
        let t = topics[i % topics.len()];
        cold.push_str(&format!(
            "### Note {i} on the {t}\n- The {t} changed in week {i}; nobody minded.\n\n"
        ));
    }
    cold.push_str("### Flaky aarch64 job\n- That job fails every time: its runner lacks the emulator image.\n- Moved it to the nightly pipeline until the image ships for arm64 hosts.\n");
    cold
}

#[test]
fn the_answer_that_shares_only_the_rare_word_is_not_cut() {
    use squad_memory::{Budget, LoadPlan, Situation, Touch, spawn};
    let store = InMemoryStore::new();
    let who = agent("data");
    store
        .write(&DocRef::Cold(who.clone()), &common_words_trap())
        .unwrap();
    let plan = LoadPlan::new(Situation::Debugging)
        .task("Why do the release tests fail on the ARM runner?");
    let out = spawn(&store, &who, &plan, &Budget::default(), Touch::No).unwrap();
    let rank: Vec<(String, f64)> = out
        .manifest
        .loaded
        .iter()
        .map(|l| (l.title.clone(), l.score.unwrap_or(0.0)))
        .collect();
    assert!(
        out.prompt.contains("its runner lacks the emulator image"),
        "loaded: {rank:?}\nleft: {:?}",
        out.manifest
            .left_out
            .iter()
            .filter(|l| l.title.contains("aarch64"))
            .collect::<Vec<_>>()
    );
}

#[test]
fn top_k_grows_over_near_ties_and_only_over_them() {
    use squad_memory::{Budget, LoadPlan, Reason, Situation, Touch, spawn};
    let store = InMemoryStore::new();
    let who = agent("data");
    let mut cold = String::new();
    // Fourteen sections that match the task equally (their order among themselves is noise).
    for i in 10..24 {
        cold.push_str(&format!(
            "### Canary {i}\n- the canary deploy stalled at step {i}\n\n"
        ));
    }
    // And sections that match it clearly less.
    for i in 0..6 {
        cold.push_str(&format!(
            "### Other {i}\n- a deploy went fine on day {i}, after a long wait for the build queue to drain and the cache to warm\n\n"
        ));
    }
    store.write(&DocRef::Cold(who.clone()), &cold).unwrap();
    let plan = LoadPlan::new(Situation::Debugging).task("why did the canary deploy stall");
    let out = spawn(&store, &who, &plan, &Budget::default(), Touch::No).unwrap();
    let loaded: Vec<&str> = out
        .manifest
        .loaded
        .iter()
        .map(|l| l.title.as_str())
        .collect();
    assert_eq!(loaded.len(), 14, "{loaded:?}");
    assert!(loaded.iter().all(|t| t.starts_with("Canary")), "{loaded:?}");
    let mut others = out
        .manifest
        .left_out
        .iter()
        .filter(|l| l.title.starts_with("Other"));
    assert_eq!(others.clone().count(), 6);
    assert!(others.all(|l| matches!(l.reason, Reason::Rank | Reason::NotRelevant)));
}

mod histories {
    //! Histories generated from the real shapes go through import and the Scribe, twice, and
    //! keep every line.

    use proptest::prelude::*;
    use squad_memory::{
        DocRef, ExtractiveSummarizer, ImportOptions, ImportSource, ImportTarget, InMemoryStore,
        MemoryStore, Scribe, ScribeConfig,
    };

    use super::all_text;
    use crate::{agent, at};

    fn title() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("Release tarball without dist/".to_owned()),
            Just("CLI entry point `findRoot()` → git root".to_owned()),
            Just("BlobStorageClient retries & caps".to_owned()),
            Just("📌 Release v0.8.21 — Version Bump & Tag (COMPLETE)".to_owned()),
            Just("Learnings".to_owned()),
            Just("Core Context".to_owned()),
            Just("Décisions prises".to_owned()),
            "[A-Z][a-z]{2,8}( [a-z]{2,8}){0,3}",
        ]
    }

    /// A heading's text in one of the real shapes: a date first, last, in parentheses, with an
    /// event or a time, month only, numbered, or none.
    fn heading_text() -> impl Strategy<Value = String> {
        (title(), 0u8..9, 1u8..13, 1u8..29, 0u8..24).prop_map(|(t, shape, m, d, h)| match shape {
            0 => format!("2026-{m:02}-{d:02}: {t}"),
            1 => format!("{t} (#977) (2026-{m:02}-{d:02})"),
            2 => format!("{t} (2026-{m:02}-{d:02}T{h:02}:30:00Z)"),
            3 => format!("2025-{m:02}: {t}"),
            4 => format!("2026-{m:02}-{d:02} {t}"),
            5 => format!("{t} (2026-{m:02}-{d:02} Release Incident)"),
            6 => format!("{d}. {t}: notes"),
            7 => format!("{t} — 2026-{m:02}-{d:02}T{h:02}-50-00Z"),
            _ => t,
        })
    }

    fn body_line() -> impl Strategy<Value = String> {
        prop_oneof![
            "- [a-z]{2,8}( [a-zé→—]{1,8}){0,6}",
            "\\*\\*(Context|Fix|Problem|Key learning):\\*\\* [a-z]{2,8}( [a-z]{1,8}){0,5}",
            Just("```sh\nnpm run build\n```".to_owned()),
            Just("| a | b |\n|---|---|\n| 1 | 2 |".to_owned()),
            Just("#### Sub heading".to_owned()),
            Just("Plain paragraph text — with a dash.".to_owned()),
            Just("Current task: finish the import".to_owned()),
        ]
    }

    #[derive(Debug, Clone)]
    struct Section {
        level: usize,
        heading: String,
        body: Vec<String>,
        /// Repeat an earlier section's heading instead (git's `merge=union`, or a re-opened
        /// group).
        repeat: Option<usize>,
    }

    fn section() -> impl Strategy<Value = Section> {
        (
            prop_oneof![
                Just(1usize),
                Just(2),
                Just(2),
                Just(3),
                Just(3),
                Just(3),
                Just(4)
            ],
            heading_text(),
            // Bodiless sections are common.
            prop::collection::vec(body_line(), 0..4),
            prop::option::weighted(0.2, 0usize..20),
        )
            .prop_map(|(level, heading, body, repeat)| Section {
                level,
                heading,
                body,
                repeat,
            })
    }

    fn history() -> impl Strategy<Value = (String, bool)> {
        (prop::collection::vec(section(), 1..14), any::<bool>()).prop_map(|(sections, crlf)| {
            let mut out = String::from("# AGENT\n\n");
            for (i, s) in sections.iter().enumerate() {
                let heading = match s.repeat {
                    Some(j) if j < i => &sections[j].heading,
                    _ => &s.heading,
                };
                out.push_str(&format!("{} {heading}\n", "#".repeat(s.level)));
                for l in &s.body {
                    out.push_str(l);
                    out.push('\n');
                }
                if !s.body.is_empty() {
                    out.push('\n');
                }
            }
            if crlf {
                out = out.replace('\n', "\r\n");
            }
            (out, crlf)
        })
    }

    fn assert_kept(input: &str, store: &dyn MemoryStore) -> Result<(), TestCaseError> {
        let all = all_text(store);
        let kept: std::collections::HashSet<String> = all
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        for l in input.lines() {
            let l = l.split_whitespace().collect::<Vec<_>>().join(" ");
            if l.is_empty() || l == "---" {
                continue;
            }
            prop_assert!(
                kept.contains(&l),
                "lost {:?}\n--- input\n{}\n--- stored\n{}",
                l,
                input,
                all
            );
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Imported, then the Scribe twice (the second past the TTL): every run succeeds and
        /// every line is kept.
        #[test]
        fn imported_histories_go_through_the_scribe_twice((text, _crlf) in history()) {
            let store = InMemoryStore::new();
            let who = agent("data");
            let src = ImportSource { name: "history.md".into(), text: text.clone() };
            let r = squad_memory::import(
                &store,
                &ImportTarget::Agent(who.clone()),
                &[src],
                &ImportOptions::new(at("2026-06-01T00:00:00Z")),
            ).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            prop_assert_eq!(r.lines_in, r.lines_stored);
            let scribe = Scribe::new(&store, &ExtractiveSummarizer, ScribeConfig::default());
            for now in ["2026-06-02T00:00:00Z", "2026-08-01T00:00:00Z"] {
                scribe.run(&who, at(now)).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            }
            assert_kept(&text, &store)?;
        }

        /// The same history as a hand-written hot file: the Scribe moves it to cold, twice.
        #[test]
        fn hand_written_hot_histories_go_through_the_scribe_twice((text, _crlf) in history()) {
            let store = InMemoryStore::new();
            let who = agent("data");
            store.write(&DocRef::Hot(who.clone()), &text).unwrap();
            let scribe = Scribe::new(&store, &ExtractiveSummarizer, ScribeConfig::default());
            for now in ["2026-06-02T00:00:00Z", "2026-08-01T00:00:00Z"] {
                scribe.run(&who, at(now)).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            }
            assert_kept(&text, &store)?;
        }
    }
}
