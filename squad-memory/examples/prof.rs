#![allow(clippy::print_stdout, clippy::unwrap_used, missing_docs)]
use squad_memory::{Budget, DocRef, FsStore, LoadPlan, MemoryStore, Situation, Touch, spawn};
fn main() {
    let which = std::env::args().nth(1).unwrap_or("big".into());
    if which == "sha" { sha_speed(); return; }
    if which == "lines" { lines_speed(); return; }
    if which == "passes" { passes(); return; }
    if which == "bm25" { bm25_speed(); return; }
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
#[allow(dead_code)]
fn swar_lines(b: &[u8]) -> usize {
    let mut n = 0;
    let mut i = 0;
    const LO: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const NL: u64 = 0x0a0a_0a0a_0a0a_0a0a;
    while i + 8 <= b.len() {
        let x = u64::from_le_bytes(b[i..i + 8].try_into().unwrap()) ^ NL;
        let t = ((x & LO) + LO) | x;
        let mut m = !(t | LO);
        while m != 0 {
            n += (m.trailing_zeros() as usize / 8) & 0 + 1;
            m &= m - 1;
        }
        i += 8;
    }
    n + b[i..].iter().filter(|&&c| c == b'\n').count()
}
#[allow(dead_code)]
pub fn lines_speed() {
    let text = squad_memory::conformance::realistic::cold_with_sections(1_000);
    let b = text.as_bytes();
    for _ in 0..3 {
        let s = std::time::Instant::now();
        let a = memchr::memchr_iter(b'\n', b).count();
        let t1 = s.elapsed();
        let s = std::time::Instant::now();
        let c = swar_lines(b);
        let t2 = s.elapsed();
        let s = std::time::Instant::now();
        let d = text.split_terminator('\n').count();
        let t3 = s.elapsed();
        let s = std::time::Instant::now();
        let mut low = Vec::new(); low.extend_from_slice(b); low.make_ascii_lowercase();
        let t4 = s.elapsed();
        let s = std::time::Instant::now();
        let asc = text.is_ascii();
        let t5 = s.elapsed();
        let s = std::time::Instant::now();
        let st = String::from_utf8(b.to_vec()).unwrap();
        let t6 = s.elapsed();
        println!("memchr_iter {a} {t1:?}; swar {c} {t2:?}; split {d} {t3:?}; lower {t4:?} {}; is_ascii {asc} {t5:?}; utf8 copy {t6:?} {}", low.len(), st.len());
    }
}
#[allow(dead_code)]
pub fn passes() {
    let text = squad_memory::conformance::realistic::cold_with_sections(1_000);
    let b = text.as_bytes();
    let pats: Vec<&[u8]> = vec![b"dep", b"out", b"sta", b"tim", b"tym", b"tag", b"epl", b"plo"];
    let ac = aho_corasick::AhoCorasick::builder().match_kind(aho_corasick::MatchKind::LeftmostLongest).build(&pats).unwrap();
    let mut low = Vec::with_capacity(b.len());
    for _ in 0..3 {
        let s = std::time::Instant::now();
        low.clear(); low.extend_from_slice(b); low.make_ascii_lowercase();
        let t1 = s.elapsed();
        let s = std::time::Instant::now();
        let n = ac.find_iter(&low).count();
        let t2 = s.elapsed();
        let s = std::time::Instant::now();
        let mut k = 0; let mut i = 0;
        while let Some(p) = b[i..].iter().position(|&c| c >= 0x80) { k += 1; i += p + 1; }
        let t3 = s.elapsed();
        // chunked lowercase per section
        let s = std::time::Instant::now();
        let mut m = 0;
        for sec in text.split("\n### ") { low.clear(); low.extend_from_slice(sec.as_bytes()); low.make_ascii_lowercase(); m += ac.find_iter(&low).count(); }
        let t4 = s.elapsed();
        println!("lower {t1:?} teddy {n} {t2:?} high {k} {t3:?} per-section lower+teddy {m} {t4:?}");
    }
}
#[allow(dead_code)]
pub fn bm25_speed() {
    let text = squad_memory::conformance::realistic::cold_with_sections(1_000);
    let secs: Vec<&str> = text.split("\n### ").collect();
    let idx = squad_memory::Bm25::new(&secs);
    let ascii: Vec<String> = secs.iter().map(|s| s.chars().filter(char::is_ascii).collect()).collect();
    let idx2 = squad_memory::Bm25::new(&ascii);
    for _ in 0..5 {
        let s = std::time::Instant::now();
        let r = idx.scores("why does the staging deploy time out");
        let t1 = s.elapsed();
        let s = std::time::Instant::now();
        let r2 = idx2.scores("why does the staging deploy time out");
        let t2 = s.elapsed();
        println!("bm25 over {} sections {t1:?}; ascii only {t2:?} {}", r.len(), r2.len());
    }
}
