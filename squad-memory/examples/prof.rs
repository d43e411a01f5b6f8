//! Timing of the spawn pieces (development aid).
#![allow(clippy::print_stdout, clippy::unwrap_used, missing_docs)]
use std::time::Instant;
fn main() {
    let cold = if std::env::var("SMALL").is_ok() {
        squad_memory::conformance::fixture::cold_with_entries(1000).unwrap()
    } else {
        squad_memory::conformance::realistic::cold_with_sections(1000)
    };
    println!("cold bytes {}", cold.len());
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    for _ in 0..n {
        let t = Instant::now();
        let doc = squad_memory::MemoryDoc::parse("c", &cold).unwrap();
        let parse = t.elapsed();
        let t = Instant::now();
        let texts: Vec<String> = doc.entries().map(|e| e.search_text()).collect();
        let st = t.elapsed();
        let t = Instant::now();
        let idx = squad_memory::Bm25::new(&texts);
        let build = t.elapsed();
        let t = Instant::now();
        let r = idx.rank("why does the staging deploy time out");
        let q = t.elapsed();
        let t = Instant::now();
        if std::env::var("TOK").is_ok() {
            let _ = squad_memory::tokenize(&cold);
        }
        let tok = t.elapsed();
        let store = squad_memory::InMemoryStore::new();
        let who: squad_model::AgentName = "b".parse().unwrap();
        use squad_memory::MemoryStore;
        store
            .write(&squad_memory::DocRef::Cold(who.clone()), &cold)
            .unwrap();
        let t = Instant::now();
        let _ = squad_memory::spawn(
            &store,
            &who,
            &squad_memory::LoadPlan::new(squad_memory::Situation::Debugging)
                .task("why does the staging deploy time out"),
            &squad_memory::Budget::default(),
            squad_memory::Touch::No,
        )
        .unwrap();
        let sp = t.elapsed();
        println!(
            "parse {parse:?} search_texts {st:?} bm25 build {build:?} query {q:?} tokenize-all {tok:?} spawn {sp:?} hits {}",
            r.len()
        );
    }
}
