//! Prints the figures of the memory measurement on the realistic fixture, or on a directory of
//! real files (`cargo run -p squad-memory --features conformance --example measure -- <dir>`),
//! with the questions whose evidence was not loaded; `-- held-out` asks the fixture's held-out
//! questions instead.
#![allow(clippy::print_stdout, clippy::unwrap_used, missing_docs)]
fn main() {
    let corpus = match std::env::args().nth(1) {
        Some(h) if h == "held-out" => {
            squad_memory::conformance::realistic::Corpus::generated_held_out().unwrap()
        }
        Some(dir) => {
            squad_memory::conformance::realistic::Corpus::from_dir(std::path::Path::new(&dir))
                .unwrap()
        }
        None => squad_memory::conformance::realistic::Corpus::generated().unwrap(),
    };
    for (a, t) in &corpus.agents {
        println!(
            "{a}: {} bytes, {} sections",
            t.len(),
            t.matches("\n### ").count()
        );
    }
    println!(
        "decisions: {} bytes, {} sections",
        corpus.decisions.len(),
        corpus.decisions.matches("\n### ").count()
    );
    if let Ok(dir) = std::env::var("DUMP") {
        let dir = std::path::Path::new(&dir);
        for (a, t) in &corpus.agents {
            std::fs::create_dir_all(dir.join("agents").join(a.as_str())).unwrap();
            std::fs::write(dir.join("agents").join(a.as_str()).join("history.md"), t).unwrap();
        }
        std::fs::write(dir.join("decisions.md"), &corpus.decisions).unwrap();
        let q: Vec<String> = corpus
            .questions
            .iter()
            .map(|q| format!("{}\t{}\t{}", q.agent, q.question, q.evidence))
            .collect();
        std::fs::write(dir.join("questions.tsv"), q.join("\n")).unwrap();
    }
    let store = squad_memory::InMemoryStore::new();
    let f = squad_memory::conformance::realistic::measure(&corpus, &store).unwrap();
    println!(
        "agents {} questions {} naive {} prompt {} reduction {:.3} recall {:.3} ({} / {}) lines_in {} lost {} max_prompt {}",
        f.agents,
        f.questions,
        f.naive_bytes,
        f.prompt_bytes,
        f.reduction(),
        f.recall(),
        f.found,
        f.questions,
        f.lines_in,
        f.lines_lost,
        f.max_prompt_bytes
    );
    for l in &f.lost {
        println!("LOST {l:?}");
    }
    for (q, t) in &f.misses {
        println!("MISS {q}\n   {}", t.join("\n   "));
    }
}
