//! The upstream-shaped fixture: bytes saved, recall 1.0 per situation, no stale fact loaded.

use squad_memory::conformance::fixture::Fixture;
use squad_memory::{Budget, InMemoryStore, LoadPlan, Situation, Tier, Touch, spawn};

fn setup() -> (Fixture, InMemoryStore) {
    let f = Fixture::upstream_like().unwrap();
    let store = InMemoryStore::new();
    f.install(&store).unwrap();
    (f, store)
}

#[test]
fn fixture_is_shaped_like_upstream() {
    let (f, _) = setup();
    let baseline = f.baseline_prompt().len();
    assert!(
        (34 * 1024..=74 * 1024).contains(&baseline),
        "baseline {baseline} bytes"
    );
    let cold = f
        .files
        .iter()
        .find(|(d, _)| d.tier() == Tier::Cold)
        .unwrap();
    assert!(
        cold.1.len() > 16 * 1024,
        "cold must overflow its budget: {}",
        cold.1.len()
    );
}

#[test]
fn hot_only_spawn_is_at_least_85_percent_smaller_than_the_full_history() {
    let (f, store) = setup();
    let out = spawn(
        &store,
        &f.agent,
        &LoadPlan::new(Situation::NewTask),
        &Budget::default(),
        Touch::No,
    )
    .unwrap();
    let ours = out.prompt.len();
    let baseline = f.baseline_prompt().len();
    let saved = 1.0 - ours as f64 / baseline as f64;
    assert!(
        saved >= 0.85,
        "saved {saved:.3}: {ours} vs {baseline} bytes"
    );
    assert!(out.manifest.tiers[&Tier::Hot].bytes <= 4096);
    assert_eq!(out.manifest.tiers.len(), 1, "hot only");
}

#[test]
fn every_situation_has_recall_one_and_loads_no_stale_fact() {
    let (f, store) = setup();
    let budget = Budget::default();
    for case in &f.cases {
        let out = spawn(&store, &f.agent, &case.plan, &budget, Touch::No).unwrap();
        for fact in &case.required {
            assert!(
                out.prompt.contains(fact),
                "{}: missing {fact}\n{}",
                case.plan.situation,
                out.prompt
            );
        }
        for stale in &f.stale {
            assert!(
                !out.prompt.contains(stale),
                "{}: loaded {stale}",
                case.plan.situation
            );
        }
        let hot = out.manifest.tiers[&Tier::Hot].bytes;
        let cold = out.manifest.tiers.get(&Tier::Cold).map_or(0, |r| r.bytes);
        assert!(
            hot <= budget.hot && hot + cold <= budget.hot_plus_cold,
            "{}",
            case.plan.situation
        );
        // The baseline carries every stale fact: what we avoid is real.
        let baseline = f.baseline_prompt();
        assert!(f.stale.iter().all(|s| baseline.contains(s)));
    }
}

#[test]
fn every_situation_loads_exactly_its_tiers() {
    let (f, store) = setup();
    for case in &f.cases {
        let out = spawn(&store, &f.agent, &case.plan, &Budget::default(), Touch::No).unwrap();
        let want = case.plan.tiers();
        let got = &out.manifest.tiers;
        assert_eq!(
            got.contains_key(&Tier::Cold),
            want.cold,
            "{}",
            case.plan.situation
        );
        assert_eq!(
            got.contains_key(&Tier::Wiki),
            want.wiki,
            "{}",
            case.plan.situation
        );
        assert_eq!(out.prompt.contains("### Cold"), want.cold);
        assert_eq!(out.prompt.contains("### Wiki"), want.wiki);
        assert!(
            want.cold || !out.prompt.contains("ARCHIVED-1"),
            "the archive loads only with cold"
        );
    }
}

/// The labelled markers (`FACT-...`, `STALE-...`) present in a text.
fn markers(text: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for prefix in ["FACT-", "STALE-"] {
        for (i, _) in text.match_indices(prefix) {
            let m: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '-')
                .collect();
            out.insert(m);
        }
    }
    out
}

/// The memory-value gate (reference §4), per situation, against the full-history baseline:
/// at least 50 % fewer bytes, recall no worse, precision better, stale facts avoided.
#[test]
fn every_situation_passes_the_memory_value_gate() {
    let (f, store) = setup();
    let baseline = f.baseline_prompt();
    let base_loaded = markers(&baseline);
    for case in &f.cases {
        let out = spawn(&store, &f.agent, &case.plan, &Budget::default(), Touch::No).unwrap();
        let ours = markers(&out.prompt);
        let required: std::collections::BTreeSet<String> =
            case.required.iter().map(|s| (*s).to_owned()).collect();
        let recall = |loaded: &std::collections::BTreeSet<String>| {
            required.intersection(loaded).count() as f64 / required.len() as f64
        };
        let precision = |loaded: &std::collections::BTreeSet<String>| {
            required.intersection(loaded).count() as f64 / loaded.len().max(1) as f64
        };
        let stale = |loaded: &std::collections::BTreeSet<String>| {
            loaded.iter().filter(|m| m.starts_with("STALE-")).count()
        };
        let name = case.plan.situation;
        assert!(
            out.prompt.len() * 2 <= baseline.len(),
            "{name}: reduction below 50 %"
        );
        assert!(recall(&ours) >= recall(&base_loaded), "{name}: recall");
        assert_eq!(recall(&ours), 1.0, "{name}: recall");
        assert!(
            precision(&ours) > precision(&base_loaded),
            "{name}: precision {ours:?}"
        );
        assert_eq!(stale(&ours), 0, "{name}");
        assert!(stale(&base_loaded) > 0, "the baseline loads stale facts");
    }
}
