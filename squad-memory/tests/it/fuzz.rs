//! Arbitrary text (multi-byte characters at every cut, `\r`, `\r\n`, NUL, very long lines,
//! markup fragments) through parse, render, spawn, the Scribe, validate and import: nothing
//! panics, and what succeeds keeps its promises.

use proptest::prelude::*;
use squad_memory::{
    Budget, DocRef, ExtractiveSummarizer, ImportOptions, ImportSource, ImportTarget, InMemoryStore,
    LoadPlan, MemoryDoc, MemoryStore, Scribe, ScribeConfig, Situation, Touch, import, spawn,
    validate,
};

use crate::{agent, at};

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("### ".to_owned()),
        Just("## ".to_owned()),
        Just("# ".to_owned()),
        Just("#### ".to_owned()),
        Just("---".to_owned()),
        Just("```".to_owned()),
        Just("~~~".to_owned()),
        Just("**id:** x-1".to_owned()),
        Just("**superseded_by:** x-1".to_owned()),
        Just("**last_loaded:** soon".to_owned()),
        Just("**entered:** 2026-01-01".to_owned()),
        Just("Current task: ".to_owned()),
        Just("Active decisions: a; b".to_owned()),
        Just("2026-03-14: ".to_owned()),
        Just("2025-07: ".to_owned()),
        Just("(2026-05-01)".to_owned()),
        Just("2026-13-45".to_owned()),
        Just("1. ".to_owned()),
        Just("decision: ".to_owned()),
        Just("\n".to_owned()),
        Just("\r\n".to_owned()),
        Just("\r".to_owned()),
        Just("\0".to_owned()),
        Just("é".to_owned()),
        Just("€".to_owned()),
        Just("😀".to_owned()),
        Just("—".to_owned()),
        Just("→".to_owned()),
        "[a-z ]{0,12}",
        any::<String>().prop_map(|s| s.chars().take(8).collect()),
        (1usize..3000).prop_map(|n| "ü".repeat(n)),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..60).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn parse_and_write_never_panic_and_settle(t in text()) {
        if let Ok(doc) = MemoryDoc::parse("f.md", &t) {
            let stable = doc.to_stable_text("f.md");
            let again = MemoryDoc::parse("f.md", &stable).unwrap();
            prop_assert_eq!(again.to_text(), stable);
            // Entries open at headings only (`###`, or a dated heading of another level), with
            // up to three spaces before the `#`.
            let is_heading = |l: &&str| {
                let u = l.trim_start_matches(' ');
                l.len() - u.len() <= 3 && u.starts_with('#')
            };
            let headings = t.split(['\n', '\r']).filter(is_heading).count();
            prop_assert!(doc.entries().count() <= headings);
        }
    }

    #[test]
    fn spawn_and_validate_never_panic_and_keep_the_hot_budget(
        hot in text(), cold in text(), wiki in text(), cap in 0usize..400, task in text()
    ) {
        let store = InMemoryStore::new();
        let who = agent("data");
        store.write(&DocRef::Hot(who.clone()), &hot).unwrap();
        store.write(&DocRef::Cold(who.clone()), &cold).unwrap();
        store.write(&DocRef::Wiki("w".parse().unwrap()), &wiki).unwrap();
        let budget = Budget { hot: cap, hot_plus_cold: cap * 4, ..Budget::default() };
        for situation in Situation::ALL {
            let plan = LoadPlan::new(situation).task(task.clone());
            let out = spawn(&store, &who, &plan, &budget, Touch::No).unwrap();
            let hot_bytes = out.manifest.tiers[&squad_memory::Tier::Hot].bytes;
            prop_assert!(hot_bytes <= cap);
        }
        validate(&store, &Budget::default()).unwrap();
    }

    #[test]
    fn the_scribe_never_panics_and_loses_no_line(hot in text(), cold in text(), days in 0i64..90) {
        let store = InMemoryStore::new();
        let who = agent("data");
        store.write(&DocRef::Hot(who.clone()), &hot).unwrap();
        store.write(&DocRef::Cold(who.clone()), &cold).unwrap();
        let summarizer = ExtractiveSummarizer;
        let now = at("2026-06-01T00:00:00Z").plus_seconds(days * 86_400);
        if let Ok(r) = Scribe::new(&store, &summarizer, ScribeConfig::default()).run(&who, now) {
            prop_assert_eq!(r.before, r.kept + r.moved_total() + r.merged);
            let mut all = String::new();
            for tier in squad_memory::Tier::ALL {
                for name in store.list(tier).unwrap() {
                    all.push_str(&store.read(&DocRef::new(tier, &name).unwrap()).unwrap().unwrap());
                    all.push('\n');
                }
            }
            let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
            let have: std::collections::HashSet<String> = all.lines().map(norm).collect();
            for l in hot.lines().chain(cold.lines()).map(|l| norm(l.strip_suffix('\r').unwrap_or(l))) {
                let l = l.trim_start_matches("###").trim().to_owned();
                if l.is_empty() || l == "---" || l.starts_with("**") {
                    continue;
                }
                prop_assert!(have.iter().any(|h| h.contains(&l)), "lost {:?}", l);
            }
        }
    }

    #[test]
    fn import_never_panics_and_stores_every_line(t in text()) {
        let store = InMemoryStore::new();
        let src = ImportSource { name: "h.md".into(), text: t };
        for target in [ImportTarget::Agent(agent("data")), ImportTarget::Wiki("d".parse().unwrap())] {
            if let Ok(r) = import(&store, &target, std::slice::from_ref(&src), &ImportOptions::new(at("2026-06-01T00:00:00Z"))) {
                prop_assert_eq!(r.lines_in, r.lines_stored);
                let again = import(&store, &target, std::slice::from_ref(&src), &ImportOptions::new(at("2026-07-01T00:00:00Z"))).unwrap();
                prop_assert!(again.plan.is_empty(), "second import wrote {:?}", again.plan);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_on_disk_are_errors_not_panics(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("memory/cold");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("data.md"), &bytes).unwrap();
        let store = squad_memory::FsStore::new(dir.path());
        let who = agent("data");
        let _ = spawn(&store, &who, &LoadPlan::new(Situation::Resuming).task("x"), &Budget::default(), Touch::No).unwrap();
        let _ = validate(&store, &Budget::default()).unwrap();
        let _ = Scribe::new(&store, &ExtractiveSummarizer, ScribeConfig::default()).run(&who, at("2026-06-01T00:00:00Z"));
    }
}
