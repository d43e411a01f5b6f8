#![allow(clippy::print_stdout, clippy::unwrap_used, missing_docs)]
use squad_memory::{Budget, DocRef, FsStore, LoadPlan, MemoryStore, Situation, Touch, spawn};
fn main() {
    let which = std::env::args().nth(1).unwrap_or("big".into());
    if which == "sha" { sha_speed(); return; }
    let n: usize = std::env::args().nth(2).map_or(20, |s| s.parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let fs = FsStore::new(dir.path().join(".squad"));
    let who: squad_model::AgentName = "bench".parse().unwrap();
    fs.write(
        &DocRef::Hot(who.clone()),
        "Current task: fix the flaky staging deploy\nBlockers: none\n",
    )
    .unwrap();
    let cold = if which == "big" {
        squad_memory::conformance::realistic::cold_with_sections(1_000)
    } else {
        squad_memory::conformance::fixture::cold_with_entries(1_000).unwrap()
    };
    fs.write(&DocRef::Cold(who.clone()), &cold).unwrap();
    let plan = LoadPlan::new(Situation::Debugging).task("why does the staging deploy time out");
    if std::env::var("PHASES").is_ok() { phases(&fs, &who, &plan); return; }
    let mut t = Vec::new();
    let mut len = 0;
    for _ in 0..n {
        let s = std::time::Instant::now();
        len += spawn(&fs, &who, &plan, &Budget::default(), Touch::No)
            .unwrap()
            .prompt
            .len();
        t.push(s.elapsed());
    }
    t.sort();
    println!(
        "{which}: {} bytes cold, p50 {:?} p95 {:?} min {:?} ({len})",
        cold.len(),
        t[n / 2],
        t[n * 95 / 100],
        t[0]
    );
}
#[allow(dead_code)]
fn sha_speed() {
    use sha2::Digest;
    let text = squad_memory::conformance::realistic::cold_with_sections(1_000);
    let mut t = Vec::new();
    for _ in 0..50 {
        let s = std::time::Instant::now();
        std::hint::black_box(sha2::Sha256::digest(text.as_bytes()));
        t.push(s.elapsed());
    }
    t.sort();
    println!("sha256 of {} bytes: p50 {:?} min {:?}", text.len(), t[25], t[0]);
}
#[allow(dead_code)]
pub fn phases(fs: &FsStore, who: &squad_model::AgentName, plan: &LoadPlan) {
    use squad_memory::{Source, SpawnInputs, render};
    let mut tr = Vec::new();
    let mut tp = Vec::new();
    let mut tz = Vec::new();
    for _ in 0..50 {
        let s = std::time::Instant::now();
        let text = fs.read(&DocRef::Cold(who.clone())).unwrap().unwrap();
        let a = s.elapsed();
        let src = Source::parse("cold/bench.md", &text).unwrap();
        let b = s.elapsed();
        let inputs = SpawnInputs { agent: who.clone(), hot: None, cold: Some(src), archive: None, wiki: vec![], skipped: vec![] };
        let out = render(plan, &inputs, &Budget::default()).unwrap();
        let c = s.elapsed();
        std::hint::black_box(out);
        drop(inputs);
        tr.push(a);
        tp.push(b - a);
        tz.push(c - b);
    }
    tr.sort(); tp.sort(); tz.sort();
    println!("read p50 {:?} min {:?}; parse p50 {:?} min {:?}; render p50 {:?} min {:?}", tr[25], tr[0], tp[25], tp[0], tz[25], tz[0]);
}
