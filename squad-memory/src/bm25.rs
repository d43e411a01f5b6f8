//! Okapi BM25 ranking, offline and model-free.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a: terms are short, and the index is rebuilt per spawn, so a fast non-keyed hash beats
/// SipHash here. The input is the caller's own memory files, not adversarial network input.
#[derive(Debug, Clone, Copy)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

const K1: f64 = 1.2;
const B: f64 = 0.75;

const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "in", "is", "it", "of",
    "on", "or", "that", "the", "this", "to", "was", "we", "with", "will", "not", "but", "all",
];

/// Splits text into lowercase alphanumeric terms, dropping one-letter terms and common English
/// stop words.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    each_term(text, &mut String::new(), |t| out.push(t.to_owned()));
    out
}

/// Calls `f` with each term of `text`, lowercased into the reused buffer `buf`.
fn each_term(text: &str, buf: &mut String, mut f: impl FnMut(&str)) {
    for raw in text.split(|c: char| !c.is_alphanumeric()) {
        if raw.len() < 2 || raw.chars().nth(1).is_none() {
            continue;
        }
        buf.clear();
        if raw.is_ascii() {
            buf.push_str(raw);
            buf.make_ascii_lowercase();
        } else {
            buf.extend(raw.chars().flat_map(char::to_lowercase));
        }
        if !STOP.contains(&buf.as_str()) {
            f(buf);
        }
    }
}

/// A BM25 index over a fixed set of documents (k1 = 1.2, b = 0.75), stored as an inverted
/// index (term -> postings), so scoring touches only the documents that contain a query term.
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
        let mut buf = String::new();
        for (doc, d) in docs.into_iter().enumerate() {
            let doc = u32::try_from(doc).unwrap_or(u32::MAX);
            let mut len = 0usize;
            let Self {
                vocab, postings, ..
            } = &mut out;
            each_term(d.as_ref(), &mut buf, |t| {
                len += 1;
                let id = match vocab.get(t) {
                    Some(&id) => id,
                    None => {
                        vocab.insert(t.to_owned(), postings.len());
                        postings.push(Vec::new());
                        postings.len() - 1
                    }
                };
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
        let mut terms: Vec<usize> = Vec::new();
        each_term(query, &mut String::new(), |t| {
            if let Some(&id) = self.vocab.get(t) {
                terms.push(id);
            }
        });
        terms.sort_unstable();
        terms.dedup();
        let mut scores = vec![0.0; self.lens.len()];
        for id in terms {
            let list = &self.postings[id];
            let df = list.len() as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
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
    fn tokenizer_lowercases_and_drops_stop_words_and_single_letters() {
        assert_eq!(
            tokenize("The DNS-cache TTL is x É Ärger"),
            ["dns", "cache", "ttl", "ärger"]
        );
    }
}
