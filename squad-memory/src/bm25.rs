//! Okapi BM25 ranking, offline and model-free.

use std::collections::HashMap;

const K1: f64 = 1.2;
const B: f64 = 0.75;

const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "in", "is", "it", "of",
    "on", "or", "that", "the", "this", "to", "was", "we", "with", "will", "not", "but", "all",
];

/// Splits text into lowercase alphanumeric terms, dropping one-letter terms and common English
/// stop words.
pub fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| t.chars().count() > 1)
        .map(str::to_lowercase)
        .filter(|t| !STOP.contains(&t.as_str()))
        .collect()
}

/// A BM25 index over a fixed set of documents (k1 = 1.2, b = 0.75).
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
    docs: Vec<HashMap<String, u32>>,
    lens: Vec<f64>,
    avg_len: f64,
    df: HashMap<String, u32>,
}

impl Bm25 {
    /// Indexes `docs` (their order is the index used in results).
    pub fn new<I, S>(docs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut out = Self {
            docs: Vec::new(),
            lens: Vec::new(),
            avg_len: 0.0,
            df: HashMap::new(),
        };
        for d in docs {
            let mut tf: HashMap<String, u32> = HashMap::new();
            let terms = tokenize(d.as_ref());
            out.lens.push(terms.len() as f64);
            for t in terms {
                *tf.entry(t).or_insert(0) += 1;
            }
            for t in tf.keys() {
                *out.df.entry(t.clone()).or_insert(0) += 1;
            }
            out.docs.push(tf);
        }
        if !out.lens.is_empty() {
            out.avg_len = out.lens.iter().sum::<f64>() / out.lens.len() as f64;
        }
        out
    }

    /// The BM25 score of every document for `query`, in document order.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let n = self.docs.len() as f64;
        let mut terms = tokenize(query);
        terms.sort();
        terms.dedup();
        let idf: Vec<(String, f64)> = terms
            .into_iter()
            .filter_map(|t| {
                let df = f64::from(*self.df.get(&t)?);
                Some((t, ((n - df + 0.5) / (df + 0.5) + 1.0).ln()))
            })
            .collect();
        self.docs
            .iter()
            .zip(&self.lens)
            .map(|(tf, len)| {
                let norm = if self.avg_len > 0.0 {
                    K1 * (1.0 - B + B * len / self.avg_len)
                } else {
                    K1
                };
                idf.iter()
                    .map(|(t, idf)| match tf.get(t) {
                        Some(&f) => {
                            let f = f64::from(f);
                            idf * f * (K1 + 1.0) / (f + norm)
                        }
                        None => 0.0,
                    })
                    .sum()
            })
            .collect()
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
