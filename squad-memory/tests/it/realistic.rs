//! The figures on the realistic fixture (the benchmark prints the same, with latency): at
//! least 85 % fewer bytes than the naive load, recall at least 0.9, no line lost.

use squad_memory::InMemoryStore;
use squad_memory::conformance::realistic::{Corpus, measure};

#[test]
fn the_realistic_fixture_meets_the_targets() {
    let corpus = Corpus::generated().unwrap();
    assert!(corpus.questions.len() >= 30);
    assert!(
        corpus
            .agents
            .iter()
            .filter(|(_, h)| h.len() >= 20_000)
            .count()
            >= 3
    );
    let f = measure(&corpus, &InMemoryStore::new()).unwrap();
    assert_eq!(f.lines_lost, 0, "{:?}", f.lost);
    assert!(f.reduction() >= 0.85, "reduction {:.3}", f.reduction());
    assert!(
        f.recall() >= 0.9,
        "recall {:.3}: {:?}",
        f.recall(),
        f.misses
    );
}

#[test]
fn the_fixture_has_the_real_shapes() {
    let c = Corpus::generated().unwrap();
    let all: String = c
        .agents
        .iter()
        .map(|(_, h)| h.as_str())
        .chain([c.decisions.as_str()])
        .collect();
    for shape in [
        "(#",
        "T05:30:00Z)",
        "Release Incident)",
        "2025-07: ",
        "Z: ",
        "### 1. ",
        "## 📌",
        "(2026-03-XX)",
        "**Context:**",
        "#### ",
        "```",
        "| before |",
        "→",
        "—",
        "naïve",
        "\r\n",
        "\r(",
    ] {
        assert!(all.contains(shape), "{shape:?}");
    }
    // Questions do not copy their evidence line.
    for q in &c.questions {
        assert!(!q.evidence.contains(&q.question) && !q.question.contains(q.evidence.as_str()));
    }
}

#[test]
fn the_held_out_questions_are_answered_by_lines_of_the_fixture() {
    let c = Corpus::generated_held_out().unwrap();
    assert!(c.questions.len() >= 20);
    let all: String = c
        .agents
        .iter()
        .map(|(_, h)| h.as_str())
        .chain([c.decisions.as_str()])
        .collect();
    let own = Corpus::generated().unwrap();
    for q in &c.questions {
        assert!(all.contains(&q.evidence), "{:?}", q.evidence);
        assert!(!q.evidence.contains(&q.question) && !q.question.contains(q.evidence.as_str()));
        assert!(own.questions.iter().all(|o| o.question != q.question));
    }
}
