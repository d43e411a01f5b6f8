//! Rendering: the template shape, budgets, overflow policy, superseded entries, the manifest.

use squad_memory::{
    Budget, DocRef, ErrorKind, InMemoryStore, LoadPlan, MemoryStore, Reason, Situation, Tier,
    Touch, spawn,
};

fn store_with(hot: &str) -> (InMemoryStore, squad_model::AgentName) {
    let store = InMemoryStore::new();
    let who = crate::agent("data");
    store.write(&DocRef::Hot(who.clone()), hot).unwrap();
    (store, who)
}

#[test]
fn default_spawn_is_the_seed_template_with_hot_only() {
    let hot = "Current task: fix login\nActive decisions: RS256\nLast actions: tests\nBlockers: none\nTalking to: worf\n";
    let (store, who) = store_with(hot);
    store
        .write(
            &DocRef::Cold(who.clone()),
            "### 2026-11-02: note: history\n",
        )
        .unwrap();
    let out = spawn(
        &store,
        &who,
        &LoadPlan::default(),
        &Budget::default(),
        Touch::No,
    )
    .unwrap();
    assert_eq!(
        out.prompt,
        format!("## Memory Context\n### Hot (current session)\n{hot}")
    );
    let m = &out.manifest;
    assert_eq!(m.tiers.keys().copied().collect::<Vec<_>>(), [Tier::Hot]);
    assert_eq!(m.tiers[&Tier::Hot].bytes, hot.len());
    assert_eq!(m.tiers[&Tier::Hot].estimated_tokens, hot.len().div_ceil(4));
    assert_eq!(m.tiers[&Tier::Hot].files[0].path, "hot/data.md");
    assert_eq!(m.tiers[&Tier::Hot].files[0].sha256.len(), 64);
    assert!(m.left_out.is_empty());
    assert_eq!(m.total_bytes, out.prompt.len());
}

#[test]
fn include_flags_add_exactly_the_named_sections() {
    let (store, who) = store_with("Current task: x\n");
    store
        .write(
            &DocRef::Cold(who.clone()),
            "### 2026-11-02: note: from cold\n",
        )
        .unwrap();
    store
        .write(
            &DocRef::Wiki("auth".parse().unwrap()),
            "# Auth\nRS256 everywhere.\n",
        )
        .unwrap();
    store
        .write(
            &DocRef::Wiki("other".parse().unwrap()),
            "# Other\nRS256 too.\n",
        )
        .unwrap();
    let plan = LoadPlan::new(Situation::NewTask)
        .include_cold()
        .include_wiki("auth".parse().unwrap());
    let out = spawn(&store, &who, &plan, &Budget::default(), Touch::No).unwrap();
    assert!(
        out.prompt
            .contains("### Cold (summarized history)\n#### 2026-11-02: note: from cold\n"),
        "{}",
        out.prompt
    );
    assert!(
        out.prompt
            .contains("### Wiki (durable reference: auth)\n# Auth\nRS256 everywhere.\n")
    );
    assert!(!out.prompt.contains("Other"));
    let missing = LoadPlan::new(Situation::NewTask).include_wiki("nope".parse().unwrap());
    let e = spawn(&store, &who, &missing, &Budget::default(), Touch::No).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
}

#[test]
fn hot_overflow_keeps_the_situation_lines_and_drops_the_oldest_first_with_a_notice() {
    let mut hot = String::from(
        "Current task: keep me\nActive decisions: keep me too\nBlockers: keep\nTalking to: keep\n",
    );
    for i in 0..40 {
        hot.push_str(&format!("Note {i:02}: {}\n", "x".repeat(60)));
    }
    hot.push_str("\n### 2026-11-01: action: oldest entry\n**id:** old\n---\n### 2026-11-29: action: newest entry\n**id:** new\n---\n");
    let (store, who) = store_with(&hot);
    let budget = Budget {
        hot: 1024,
        ..Budget::default()
    };
    let out = spawn(&store, &who, &LoadPlan::default(), &budget, Touch::No).unwrap();
    let m = &out.manifest;
    assert!(m.tiers[&Tier::Hot].bytes <= 1024);
    for pinned in [
        "Current task: keep me",
        "Active decisions: keep me too",
        "Blockers: keep",
        "Talking to: keep",
    ] {
        assert!(out.prompt.contains(pinned));
    }
    // Dated entries go first (oldest first), then undated lines from the older end (the top:
    // the file's dates grow downwards).
    let items: Vec<&str> = m.left_out.iter().map(|l| l.item.as_str()).collect();
    assert_eq!(&items[..3], ["old", "new", "line 5"]);
    assert!(
        m.left_out
            .iter()
            .all(|l| l.reason == Reason::Budget && l.tier == Tier::Hot)
    );
    assert!(
        out.prompt.contains("Note 39"),
        "the newest free line survives"
    );
    assert!(!out.prompt.contains("Note 00"));
    let notice = format!("> Memory notice: hot: {} item(s)", m.left_out.len());
    assert!(out.prompt.contains(&notice), "{}", out.prompt);
}

#[test]
fn pinned_lines_over_budget_are_cut_at_the_budget_and_reported() {
    let hot = format!("Current task: {}\n", "é".repeat(600));
    let (store, who) = store_with(&hot);
    let budget = Budget {
        hot: 101,
        ..Budget::default()
    };
    let out = spawn(&store, &who, &LoadPlan::default(), &budget, Touch::No).unwrap();
    assert!(out.manifest.tiers[&Tier::Hot].bytes <= 101);
    assert_eq!(out.manifest.left_out[0].reason, Reason::Truncated);
    assert!(out.prompt.contains("> Memory notice:"));
}

#[test]
fn superseded_entries_never_load_in_any_tier() {
    let e = "### 2026-11-01: decision: OLD-FACT\n**id:** o\n**superseded_by:** n\n---\n### 2026-11-02: decision: NEW-FACT\n**id:** n\n---\n";
    let (store, who) = store_with(e);
    store.write(&DocRef::Cold(who.clone()), e).unwrap();
    store.write(&DocRef::Wiki("t".parse().unwrap()), e).unwrap();
    let plan = LoadPlan::new(Situation::PostIncident).include_wiki("t".parse().unwrap());
    let out = spawn(&store, &who, &plan, &Budget::default(), Touch::No).unwrap();
    assert_eq!(out.prompt.matches("NEW-FACT").count(), 3);
    assert!(!out.prompt.contains("OLD-FACT"));
    let sup: Vec<Tier> = out
        .manifest
        .left_out
        .iter()
        .filter(|l| l.reason == Reason::Superseded)
        .map(|l| l.tier)
        .collect();
    assert_eq!(sup, [Tier::Hot, Tier::Cold, Tier::Wiki]);
}

#[test]
fn cold_takes_the_most_relevant_entries_that_fit_what_hot_leaves() {
    let (store, who) = store_with("Current task: x\n");
    let mut cold = String::new();
    for i in 0..50 {
        cold.push_str(&format!(
            "### 2026-11-{:02}: note: routine work item {i} {}\n**id:** r{i}\n---\n",
            1 + i % 28,
            "y".repeat(100)
        ));
    }
    cold.push_str(
        "### 2025-01-01: note: the DNS resolver causes the deploy timeout\n**id:** dns\n---\n",
    );
    store.write(&DocRef::Cold(who.clone()), &cold).unwrap();
    let budget = Budget {
        hot_plus_cold: 1024,
        ..Budget::default()
    };
    let plan = LoadPlan::new(Situation::Debugging).task("deploy timeout");
    let out = spawn(&store, &who, &plan, &budget, Touch::No).unwrap();
    let m = &out.manifest;
    assert!(m.tiers[&Tier::Hot].bytes + m.tiers[&Tier::Cold].bytes <= 1024);
    assert!(
        m.tiers[&Tier::Cold]
            .entries
            .iter()
            .any(|id| id.as_str() == "dns"),
        "oldest but most relevant"
    );
    assert!(out.prompt.contains("> Memory notice:"));
    // Without a task: newest first.
    let out = spawn(
        &store,
        &who,
        &LoadPlan::new(Situation::Resuming),
        &budget,
        Touch::No,
    )
    .unwrap();
    assert!(
        !out.manifest.tiers[&Tier::Cold]
            .entries
            .iter()
            .any(|id| id.as_str() == "dns")
    );
}

#[test]
fn wiki_without_topic_or_task_says_so() {
    let (store, who) = store_with("Current task: x\n");
    store
        .write(&DocRef::Wiki("auth".parse().unwrap()), "# Auth\n")
        .unwrap();
    let out = spawn(
        &store,
        &who,
        &LoadPlan::new(Situation::Onboarding),
        &Budget::default(),
        Touch::No,
    )
    .unwrap();
    assert_eq!(out.manifest.left_out[0].reason, Reason::NoTopic);
    assert!(out.prompt.contains("no topic was named"));
}

#[test]
fn manifest_serialises_to_the_cli_json_shape() {
    let (store, who) = store_with("Current task: x\n");
    let out = spawn(
        &store,
        &who,
        &LoadPlan::default(),
        &Budget {
            hot: 5,
            ..Budget::default()
        },
        Touch::No,
    )
    .unwrap();
    let v = serde_json::to_value(&out).unwrap();
    assert!(v["prompt"].is_string());
    assert!(v["manifest"]["tiers"]["hot"]["bytes"].is_u64());
    assert!(v["manifest"]["tiers"]["hot"]["files"][0]["path"].is_string());
    assert!(v["manifest"]["tiers"]["hot"]["files"][0]["sha256"].is_string());
    assert_eq!(v["manifest"]["left_out"][0]["tier"], "hot");
    assert_eq!(v["manifest"]["left_out"][0]["reason"], "truncated");
    assert!(v["manifest"]["left_out"][0]["bytes"].is_u64());
}

#[test]
fn hot_keeps_the_newest_material_when_the_newest_is_on_top() {
    let mut hot = String::from("Current task: keep me\n\n");
    for d in (1..=20).rev() {
        hot.push_str(&format!(
            "### 2026-11-{d:02}: note: day {d} {}\nbody of day {d}\n---\n",
            "z".repeat(80)
        ));
    }
    let (store, who) = store_with(&hot);
    let budget = Budget {
        hot: 1024,
        ..Budget::default()
    };
    let out = spawn(&store, &who, &LoadPlan::default(), &budget, Touch::No).unwrap();
    assert!(out.manifest.tiers[&Tier::Hot].bytes <= 1024);
    assert!(out.prompt.contains("Current task: keep me"));
    assert!(out.prompt.contains("day 20 "), "{}", out.prompt);
    assert!(!out.prompt.contains("day 1 "));
}

#[test]
fn a_cut_never_falls_inside_a_character() {
    // Multi-byte characters at every position around the budget: no panic, and the budget holds.
    for pad in 0..8 {
        let hot = format!(
            "Current task: {}{}\nNotes: café au lait — ok\n",
            "a".repeat(pad),
            "é€😀".repeat(60)
        );
        let (store, who) = store_with(&hot);
        for cap in 90..110 {
            let budget = Budget {
                hot: cap,
                ..Budget::default()
            };
            let out = spawn(&store, &who, &LoadPlan::default(), &budget, Touch::No).unwrap();
            assert!(out.manifest.tiers[&Tier::Hot].bytes <= cap);
        }
    }
}

#[test]
fn a_long_section_is_offered_in_parts_and_reported_once_when_it_matches_nothing() {
    let (store, who) = store_with("Current task: deploys\n");
    let para = |w: &str| format!("- {}\n", format!("{w} ").repeat(40));
    let long_irrelevant: String = (0..6).map(|_| para("lunch menu soup") + "\n").collect();
    let long_relevant: String = (0..3)
        .map(|_| para("lunch menu soup") + "\n")
        .collect::<String>()
        + &para("the staging deploy timed out on the resolver cache")
        + "\n"
        + &(0..3)
            .map(|_| para("lunch menu soup") + "\n")
            .collect::<String>();
    store
        .write(
            &DocRef::Cold(who.clone()),
            &format!(
                "### Cafeteria notes\n**id:** food\n{long_irrelevant}---\n\n### Staging incident\n**id:** stage\n{long_relevant}---\n"
            ),
        )
        .unwrap();
    let plan = LoadPlan::new(Situation::Debugging).task("why did the staging deploy time out");
    let out = spawn(&store, &who, &plan, &Budget::default(), Touch::No).unwrap();
    // The long section loads in parts, each under its heading.
    assert!(out.prompt.contains("#### Staging incident (part "));
    assert!(out.prompt.contains("the staging deploy timed out"));
    assert!(!out.prompt.contains("Cafeteria"));
    let m = &out.manifest;
    let food: Vec<_> = m
        .left_out
        .iter()
        .filter(|l| l.title == "Cafeteria notes")
        .collect();
    assert_eq!(food.len(), 1, "{food:?}");
    assert_eq!(food[0].item, "food");
    assert_eq!(food[0].reason, Reason::NotRelevant);
    assert!(food[0].bytes > long_irrelevant.len() / 2);
    // The file the prompt took text from is listed with the hash of that text.
    let cold = &m.tiers[&Tier::Cold];
    assert_eq!(cold.files.len(), 1);
    assert_eq!(cold.files[0].path, format!("cold/{who}.md"));
    assert_eq!(cold.files[0].sha256.len(), 64);
    assert!(m.loaded.iter().any(|l| l.item.starts_with("stage (part ")));
}
