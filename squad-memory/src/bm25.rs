//! Okapi BM25 ranking, offline and model-free.

use std::collections::HashMap;

use rust_stemmers::{Algorithm, Stemmer};

/// foldhash: terms are short and the index is rebuilt per spawn, so a fast non-keyed hash beats
/// SipHash here (the input is the caller's own memory files). Fixed state: deterministic.
type FnvMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Common English words that carry no topic (articles, pronouns, auxiliaries, question words),
/// so that a question phrased as a user would ask it ranks on its content words.
const STOP: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "been", "before", "being", "but", "by", "can", "could", "did", "do", "does", "doing",
    "for", "from", "had", "has", "have", "having", "he", "her", "here", "him", "his", "how", "i",
    "if", "in", "into", "is", "it", "its", "just", "me", "my", "no", "nor", "not", "of", "on",
    "once", "or", "our", "ours", "she", "should", "so", "some", "such", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "those", "to", "too", "us", "very",
    "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will",
    "with", "would", "you", "your",
];

/// Splits text into terms: alphanumeric runs, lowercased, without one-letter words and common
/// English stop words, each reduced to its stem by the Snowball English stemmer
/// (`rust-stemmers`), so `deploys`, `deployed` and `deploying` are one term.
///
/// ```
/// assert_eq!(squad_memory::tokenize("The deploys were failing"), ["deploy", "fail"]);
/// ```
pub fn tokenize(text: &str) -> Vec<String> {
    let stemmer = Stemmer::create(Algorithm::English);
    let mut out = Vec::new();
    each_word(text, &mut String::new(), |w| {
        if !is_stop(w) {
            out.push(stemmer.stem(w).into_owned());
        }
    });
    out
}

fn is_stop(w: &str) -> bool {
    STOP.binary_search(&w).is_ok()
}

/// Calls `f` with each word of `text` (two characters or more), lowercased into the reused
/// buffer `buf`.
fn each_word(text: &str, buf: &mut String, mut f: impl FnMut(&str)) {
    each_raw_word(text, |raw| {
        lower(raw, buf);
        f(buf);
    });
}

/// Lowercases `raw` into `buf`.
fn lower(raw: &str, buf: &mut String) {
    buf.clear();
    if raw.is_ascii() {
        buf.push_str(raw);
        buf.make_ascii_lowercase();
    } else {
        buf.extend(raw.chars().flat_map(char::to_lowercase));
    }
}

/// Calls `f` with each word of `text` as it is written: runs of alphanumeric characters, two
/// characters or more. ASCII is scanned byte by byte; runs holding other characters are split
/// by `char::is_alphanumeric`.
fn each_raw_word<'t>(text: &'t str, mut f: impl FnMut(&'t str)) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !(b[i].is_ascii_alphanumeric() || b[i] >= 0x80) {
            i += 1;
            continue;
        }
        let start = i;
        let mut ascii = true;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] >= 0x80) {
            ascii &= b[i] < 0x80;
            i += 1;
        }
        // `start` and `i` sit next to ASCII bytes or the ends: character boundaries.
        let run = &text[start..i];
        if ascii {
            if run.len() >= 2 {
                f(run);
            }
        } else {
            for w in run.split(|c: char| !c.is_alphanumeric()) {
                if w.chars().nth(1).is_some() {
                    f(w);
                }
            }
        }
    }
}

/// Short forms developers write for longer words, as stems: a query holding one also asks for
/// the other.
const ABBREVIATIONS: &[(&str, &[&str])] = &[
    ("pr", &["pull", "request"]),
    ("repo", &["repositori"]),
    ("doc", &["document"]),
    ("config", &["configur"]),
    ("env", &["environ"]),
    ("dep", &["depend"]),
    ("auth", &["authent"]),
    ("dir", &["directori"]),
    ("nav", &["navig"]),
    ("ci", &["continu", "integr"]),
    ("perf", &["perform"]),
    ("spec", &["specif"]),
    ("impl", &["implement"]),
    ("msg", &["messag"]),
    ("info", &["inform"]),
    ("app", &["applic"]),
    ("db", &["databas"]),
    ("k8s", &["kubernet"]),
];

/// `true` when two different stems are forms of one word: one holds the other whole (at least
/// four characters), or they share a prefix of at least five characters covering most of the
/// shorter one.
fn related(q: &str, t: &str) -> bool {
    if q == t {
        return false;
    }
    let (short, long) = if q.len() <= t.len() { (q, t) } else { (t, q) };
    if short.chars().count() < 4 {
        return false;
    }
    if long.starts_with(short) || long.ends_with(short) {
        return true;
    }
    let common = q.chars().zip(t.chars()).take_while(|(a, b)| a == b).count();
    common >= 5 && common * 5 >= short.chars().count() * 4
}

/// Maps words to term ids, stemming each distinct word once (cached by the word as written,
/// so a repeated word costs one lookup).
struct Terms<'t> {
    stemmer: Stemmer,
    words: FnvMap<&'t str, Option<usize>>,
    buf: String,
}

impl<'t> Terms<'t> {
    fn new() -> Self {
        Self {
            stemmer: Stemmer::create(Algorithm::English),
            words: FnvMap::default(),
            buf: String::new(),
        }
    }

    /// The term id of `word`, adding its stem to `vocab` (with a new postings list) if new.
    fn id(
        &mut self,
        word: &'t str,
        vocab: &mut FnvMap<String, usize>,
        postings: &mut Vec<Vec<(u32, u32)>>,
    ) -> Option<usize> {
        if let Some(id) = self.words.get(word) {
            return *id;
        }
        lower(word, &mut self.buf);
        let id = if is_stop(&self.buf) {
            None
        } else {
            let stem = self.stemmer.stem(&self.buf);
            Some(match vocab.get(stem.as_ref()) {
                Some(&id) => id,
                None => {
                    vocab.insert(stem.into_owned(), postings.len());
                    postings.push(Vec::new());
                    postings.len() - 1
                }
            })
        };
        self.words.insert(word, id);
        id
    }
}

/// A BM25 index over a fixed set of documents (k1 = 1.2, b = 0.75), stored as an inverted
/// index (stemmed term -> postings), so scoring touches only the documents that contain a query
/// term. Terms come from [`tokenize`]'s rules; each distinct word is stemmed once per index.
///
/// ```
/// use squad_memory::Bm25;
///
/// let idx = Bm25::new(["deploy timeout in staging", "auth uses RS256 keys", "lunch menu"]);
/// let ranked = idx.rank("why does the staging deploy time out");
/// assert_eq!(ranked[0].0, 0);
/// assert!(ranked.iter().all(|(_, score)| *score > 0.0));
/// ```
#[derive(Debug, Clone)]
pub struct Bm25 {
    vocab: FnvMap<String, usize>,
    postings: Vec<Vec<(u32, u32)>>,
    lens: Vec<f64>,
    avg_len: f64,
}

impl Bm25 {
    /// Indexes `docs` (their order is the index used in results).
    pub fn new<I, S>(docs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut out = Self {
            vocab: FnvMap::default(),
            postings: Vec::new(),
            lens: Vec::new(),
            avg_len: 0.0,
        };
        let docs: Vec<S> = docs.into_iter().collect();
        let mut terms = Terms::new();
        for (doc, d) in docs.iter().enumerate() {
            let doc = u32::try_from(doc).unwrap_or(u32::MAX);
            let mut len = 0usize;
            let Self {
                vocab, postings, ..
            } = &mut out;
            each_raw_word(d.as_ref(), |w| {
                let Some(id) = terms.id(w, vocab, postings) else {
                    return;
                };
                len += 1;
                let list = &mut postings[id];
                match list.last_mut() {
                    Some((d, tf)) if *d == doc => *tf += 1,
                    _ => list.push((doc, 1)),
                }
            });
            out.lens.push(len as f64);
        }
        if !out.lens.is_empty() {
            out.avg_len = out.lens.iter().sum::<f64>() / out.lens.len() as f64;
        }
        out
    }

    /// The BM25 score of every document for `query`, in document order.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let n = self.lens.len() as f64;
        let mut scores = vec![0.0; self.lens.len()];
        for (id, weight) in self.query_terms(query) {
            let list = &self.postings[id];
            let df = list.len() as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln() * weight;
            for &(doc, tf) in list {
                let d = doc as usize;
                let norm = if self.avg_len > 0.0 {
                    K1 * (1.0 - B + B * self.lens[d] / self.avg_len)
                } else {
                    K1
                };
                let f = f64::from(tf);
                scores[d] += idf * f * (K1 + 1.0) / (f + norm);
            }
        }
        scores
    }

    /// The indexed terms a query asks for, each with a weight: its own stems (1.0); the common
    /// short forms and long forms of words developers abbreviate (`PR` and `pull request`,
    /// `repo`, `docs`, `config`, ...: 0.8); and indexed terms that share a long prefix with a
    /// query stem or hold it whole (`licence`/`license`, `symlink`/`link`,
    /// `subdirectory`/`directory`: 0.5). The best weight per term counts once.
    fn query_terms(&self, query: &str) -> Vec<(usize, f64)> {
        let stems = tokenize(query);
        let mut weights: FnvMap<usize, f64> = FnvMap::default();
        let mut add = |id: usize, w: f64| {
            let e = weights.entry(id).or_insert(0.0);
            if w > *e {
                *e = w;
            }
        };
        for q in &stems {
            if let Some(&id) = self.vocab.get(q) {
                add(id, 1.0);
            }
        }
        for (short, long) in ABBREVIATIONS {
            let has_short = stems.iter().any(|q| q == short);
            let has_long = long.iter().all(|l| stems.iter().any(|q| q == l));
            if has_short {
                for l in *long {
                    if let Some(&id) = self.vocab.get(*l) {
                        add(id, 0.8);
                    }
                }
            }
            if has_long && let Some(&id) = self.vocab.get(*short) {
                add(id, 0.8);
            }
        }
        let fuzzy: Vec<&String> = stems.iter().filter(|q| q.chars().count() >= 4).collect();
        if !fuzzy.is_empty() {
            for (term, &id) in &self.vocab {
                if fuzzy.iter().any(|q| related(q, term)) {
                    add(id, 0.5);
                }
            }
        }
        let mut out: Vec<(usize, f64)> = weights.into_iter().collect();
        out.sort_by_key(|&(id, _)| id);
        out
    }

    /// Documents with a positive score, best first (ties keep document order).
    pub fn rank(&self, query: &str) -> Vec<(usize, f64)> {
        let mut r: Vec<(usize, f64)> = self
            .scores(query)
            .into_iter()
            .enumerate()
            .filter(|(_, s)| *s > 0.0)
            .collect();
        r.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_follow_the_bm25_formula() {
        let docs = ["alpha beta", "alpha alpha gamma", "delta"];
        let idx = Bm25::new(docs);
        let s = idx.scores("alpha");
        // n = 3, df = 2: idf = ln((3 - 2 + 0.5) / (2 + 0.5) + 1).
        let idf = (1.5f64 / 2.5 + 1.0).ln();
        let avg = 6.0 / 3.0;
        let want =
            |tf: f64, len: f64| idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg));
        assert!((s[0] - want(1.0, 2.0)).abs() < 1e-12);
        assert!((s[1] - want(2.0, 3.0)).abs() < 1e-12);
        assert_eq!(s[2], 0.0);
        // A rarer term weighs more than a common one.
        assert!(idx.scores("gamma")[1] > idx.scores("alpha")[1]);
        assert!(idx.rank("nothing here").is_empty());
    }

    #[test]
    fn tokenizer_lowercases_stems_and_drops_stop_words_and_single_letters() {
        assert_eq!(
            tokenize("The DNS-cache TTL is x É Ärger"),
            ["dns", "cach", "ttl", "ärger"]
        );
        assert_eq!(tokenize("deploying deployed deploys"), ["deploy"; 3]);
    }

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        assert!(STOP.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn stemming_matches_word_forms() {
        let idx = Bm25::new(["the deploys timed out", "auth tokens rotate"]);
        assert_eq!(idx.rank("why did deploying time out")[0].0, 0);
    }
}
