//! Import: every heading shape, every line kept, idempotent, dry run, caps.

use std::collections::BTreeSet;

use squad_memory::{
    Budget, DocRef, ImportOptions, ImportSource, ImportTarget, InMemoryStore, MemoryDoc,
    MemoryStore, Tier, import,
};

use crate::{agent, at};

const HISTORY: &str = "# DATA\r\n\r\nCurrent task: ship the tiered memory\nBlockers: none\n\n> Preamble — naïve notes, café.\n\n## Core Context\n\n- Owns the CLI → releases & tags\n\n## Learnings\n\n### Release tarball without dist/ (#977) (2026-05-01)\n**Context:** publish ran first\n- Root cause: `npm publish` before `npm run build`\n\n### Upgrade keeps edits (2026-03-15T05:30:00Z)\nbody\n\n### Tag pushed twice (2026-03-23 Release Incident)\nbody 2\n\n### 2026-03-14: Title with: colon\n#### Sub heading\n```md\n### not a heading\n---\n```\n| a | b |\n|---|---|\n| 1 | 2 |\n\n### 2025-07: Month only\nx\n\n### 2026-03-01T00:34Z: Short time\ny\n\n### 1. Numbered: not a date\nz\n\n### CLI Entry Point Architecture\nundated body\n\n### 2026-13-45: not a date at all\nw\n\n## 📌 Release v0.8.21 — Version Bump & Tag (COMPLETE)\n\n### 2026-03-14: Title with: colon\n#### Sub heading\n```md\n### not a heading\n---\n```\n| a | b |\n|---|---|\n| 1 | 2 |\n\n## 📌 INCIDENT REPORT: tag pushed twice (2026-03-XX)\n\nFree text under an incident group.\n---\nAfter a rule.\n";

fn src(name: &str, text: &str) -> ImportSource {
    ImportSource {
        name: name.into(),
        text: text.into(),
    }
}

fn all_lines(store: &dyn MemoryStore) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for tier in Tier::ALL {
        for name in store.list(tier).unwrap() {
            let t = store
                .read(&DocRef::new(tier, &name).unwrap())
                .unwrap()
                .unwrap();
            out.extend(
                t.lines()
                    .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")),
            );
        }
    }
    out
}

#[test]
fn every_heading_shape_imports_and_every_line_is_stored() {
    let store = InMemoryStore::new();
    let who = agent("data");
    let r = import(
        &store,
        &ImportTarget::Agent(who.clone()),
        &[src("history.md", HISTORY)],
        &ImportOptions::new(at("2026-06-01T00:00:00Z")),
    )
    .unwrap();
    assert_eq!(r.lines_in, r.lines_stored);
    // Ten `###` sections and the dated `## 📌 INCIDENT REPORT … (2026-03-XX)`.
    assert_eq!(r.entries, 11);
    assert_eq!(
        (r.added, r.merged),
        (10, 1),
        "the union duplicate is merged"
    );
    assert_eq!(r.hot_lines, 2);
    // Round trip: every non-blank input line is in some tier.
    let lines = all_lines(&store);
    for l in HISTORY.lines() {
        let k = l.split_whitespace().collect::<Vec<_>>().join(" ");
        if !k.is_empty() {
            assert!(lines.contains(&k), "lost {l:?}");
        }
    }
    let hot = store.read(&DocRef::Hot(who.clone())).unwrap().unwrap();
    assert_eq!(
        hot,
        "Current task: ship the tiered memory\nBlockers: none\n"
    );
    let cold = MemoryDoc::parse("c", &store.read(&DocRef::Cold(who)).unwrap().unwrap()).unwrap();
    let e: Vec<_> = cold.entries().collect();
    let date = |i: usize| e[i].date.map(|d| d.to_string()).unwrap_or_default();
    assert_eq!(date(0), "2026-05-01T00:00:00Z");
    assert_eq!(date(1), "2026-03-15T05:30:00Z");
    assert_eq!(date(2), "2026-03-23T00:00:00Z");
    assert_eq!(date(3), "2026-03-14T00:00:00Z");
    assert_eq!(e[3].title, "Title with: colon");
    assert_eq!(date(4), "2025-07-01T00:00:00Z");
    assert_eq!(date(5), "2026-03-01T00:34:00Z");
    assert_eq!(
        (date(6), e[6].heading.as_str()),
        (String::new(), "1. Numbered: not a date")
    );
    assert_eq!(date(7), "");
    assert_eq!(e[0].group.as_deref(), Some("Learnings"));
    assert!(e.iter().all(|e| e.entered.is_some()));
    // A heading shaped like a bad date is a warning, never a refusal.
    assert!(
        r.warnings.iter().any(|w| w.line == 46 && !w.is_error()),
        "{:?}",
        r.warnings
    );
}

#[test]
fn importing_twice_changes_nothing() {
    let store = InMemoryStore::new();
    let target = ImportTarget::Agent(agent("data"));
    let sources = [src("history.md", HISTORY)];
    import(
        &store,
        &target,
        &sources,
        &ImportOptions::new(at("2026-06-01T00:00:00Z")),
    )
    .unwrap();
    let before: Vec<Option<String>> = [Tier::Hot, Tier::Cold, Tier::Archive]
        .iter()
        .map(|t| store.read(&DocRef::new(*t, "data").unwrap()).unwrap())
        .collect();
    let r = import(
        &store,
        &target,
        &sources,
        &ImportOptions::new(at("2026-07-01T00:00:00Z")),
    )
    .unwrap();
    assert_eq!(r.added, 0);
    assert!(r.plan.is_empty(), "{:?}", r.plan);
    let after: Vec<Option<String>> = [Tier::Hot, Tier::Cold, Tier::Archive]
        .iter()
        .map(|t| store.read(&DocRef::new(*t, "data").unwrap()).unwrap())
        .collect();
    assert_eq!(before, after);
}

#[test]
fn a_dry_run_writes_nothing_and_reports_the_plan() {
    let store = InMemoryStore::new();
    let mut o = ImportOptions::new(at("2026-06-01T00:00:00Z"));
    o.dry_run = true;
    let r = import(
        &store,
        &ImportTarget::Agent(agent("data")),
        &[src("h.md", HISTORY)],
        &o,
    )
    .unwrap();
    assert!(r.dry_run);
    assert_eq!(r.lines_in, r.lines_stored);
    let paths: Vec<&str> = r.plan.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["cold/data.md", "hot/data.md"]);
    for t in Tier::ALL {
        assert!(store.list(t).unwrap().is_empty());
    }
}

#[test]
fn decisions_import_to_the_wiki_and_split_over_the_cap() {
    let store = InMemoryStore::new();
    let mut decisions = String::from("# Decisions\n\n> Team decisions.\n\n---\n\n## Process\n\n");
    for i in 0..400 {
        decisions.push_str(&format!(
            "### 2026-03-{:02}: Decision {i}\n**By:** Data\n**What:** rule number {i}.\r\n**Why:** because\rreasons.\n\n---\n\n",
            1 + i % 28
        ));
    }
    let r = import(
        &store,
        &ImportTarget::Wiki("decisions".parse().unwrap()),
        &[src("decisions.md", &decisions)],
        &ImportOptions::new(at("2026-06-01T00:00:00Z")),
    )
    .unwrap();
    assert_eq!(r.lines_in, r.lines_stored);
    let names = store.list(Tier::Wiki).unwrap();
    assert!(names.len() > 1, "{names:?}");
    let budget = Budget::default();
    assert!(
        squad_memory::validate(&store, &budget)
            .unwrap()
            .iter()
            .all(|p| !p.is_error()),
        "every continuation stays within the wiki cap"
    );
}

#[test]
fn a_long_history_keeps_cold_within_its_cap() {
    let store = InMemoryStore::new();
    let mut h = String::from("# BIG\n\n## Learnings\n\n");
    for i in 0..300 {
        h.push_str(&format!(
            "### 2025-{:02}-01: Lesson {i}\n{}\n\n",
            1 + i % 12,
            "text ".repeat(60)
        ));
    }
    let r = import(
        &store,
        &ImportTarget::Agent(agent("big")),
        &[src("h.md", &h)],
        &ImportOptions::new(at("2026-06-01T00:00:00Z")),
    )
    .unwrap();
    assert_eq!(r.lines_in, r.lines_stored);
    assert!(r.warnings.iter().any(|w| w.message.contains("archive")));
    let cold = store.read(&DocRef::Cold(agent("big"))).unwrap().unwrap();
    assert!(cold.len() <= Budget::default().cold_file);
    assert!(
        store
            .read(&DocRef::Archive(agent("big")))
            .unwrap()
            .is_some()
    );
}

#[test]
fn a_nul_byte_is_refused_with_file_and_line() {
    let store = InMemoryStore::new();
    let e = import(
        &store,
        &ImportTarget::Agent(agent("data")),
        &[src("history.md", "ok\nbad\0\n")],
        &ImportOptions::new(at("2026-06-01T00:00:00Z")),
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "history.md:2: line contains a NUL byte");
    assert!(store.list(Tier::Cold).unwrap().is_empty());
}

#[test]
fn progress_comes_in_stage_order_and_only_grows() {
    use squad_memory::{ImportStage, import_with_progress};
    let store = InMemoryStore::new();
    let mut seen = Vec::new();
    let r = import_with_progress(
        &store,
        &ImportTarget::Agent(agent("data")),
        &[src("a.md", HISTORY), src("b.md", "### Other\nbody\n")],
        &ImportOptions::new(at("2026-06-01T00:00:00Z")),
        &mut |p| seen.push(p),
    )
    .unwrap();
    let stages = [
        ImportStage::Read,
        ImportStage::Load,
        ImportStage::Place,
        ImportStage::Check,
        ImportStage::Write,
    ];
    let rank = |s: ImportStage| stages.iter().position(|x| *x == s).unwrap();
    for w in seen.windows(2) {
        let (a, b) = (w[0], w[1]);
        assert!(rank(a.stage) <= rank(b.stage), "{seen:?}");
        if a.stage == b.stage {
            assert!(a.done <= b.done && a.total == b.total, "{seen:?}");
        }
    }
    for s in stages {
        let last = seen.iter().rfind(|p| p.stage == s).unwrap();
        assert_eq!(last.done, last.total, "{s:?} ends complete: {seen:?}");
    }
    assert_eq!(seen[0].total, 2, "two files to read");
    let writes = seen
        .iter()
        .rfind(|p| p.stage == ImportStage::Write)
        .unwrap();
    assert_eq!(writes.total, r.plan.len());
    // A dry run writes nothing, and says so.
    let mut seen = Vec::new();
    import_with_progress(
        &InMemoryStore::new(),
        &ImportTarget::Agent(agent("data")),
        &[src("a.md", HISTORY)],
        &ImportOptions {
            dry_run: true,
            ..ImportOptions::new(at("2026-06-01T00:00:00Z"))
        },
        &mut |p| seen.push(p),
    )
    .unwrap();
    assert_eq!(
        seen.last().map(|p| (p.stage, p.total)),
        Some((ImportStage::Write, 0))
    );
}
