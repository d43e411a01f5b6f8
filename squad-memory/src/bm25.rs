//! Okapi BM25 ranking, offline and model-free.

use std::collections::HashMap;

use aho_corasick::{AhoCorasick, MatchKind};
use rust_stemmers::{Algorithm, Stemmer};

use crate::index::SearchIndex;

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

/// `true` when an ASCII word has a case boundary at `i` (`i > 0`): a lowercase letter or digit
/// then a capital (`blob|Storage`), or the last capital of an acronym before a lowercase letter
/// (`HTTP|Server`).
fn case_boundary(w: &[u8], i: usize) -> bool {
    let (p, c) = (w[i - 1], w[i]);
    c.is_ascii_uppercase()
        && (p.is_ascii_lowercase()
            || (p.is_ascii_uppercase() && w.get(i + 1).is_some_and(u8::is_ascii_lowercase)))
}

/// Calls `f` with each part of a PascalCase or camelCase ASCII word (`BlobStorageClient`:
/// `Blob`, `Storage`, `Client`; `HTTPServer`: `HTTP`, `Server`), as written, when it has two
/// parts or more. Parts of one character are skipped (as one-letter words are).
fn camel_parts<'w>(w: &'w str, mut f: impl FnMut(&'w str)) {
    let b = w.as_bytes();
    let mut start = 0;
    for i in 1..b.len() {
        if case_boundary(b, i) {
            if i - start >= 2 {
                f(&w[start..i]);
            }
            start = i;
        }
    }
    if start > 0 && b.len() - start >= 2 {
        f(&w[start..]);
    }
}

/// `true` for the characters that join the parts of a dotted, kebab or snake identifier.
fn joiner(b: u8) -> bool {
    matches!(b, b'.' | b'-' | b'_')
}

/// Calls `f` with the extra words a text's compound identifiers stand for, lowercased in
/// `buf`: the parts of each PascalCase or camelCase word, and the whole of each dotted, kebab
/// or snake identifier written as one word (`Contoso.Extensions.Http`: `contosoextensionshttp`;
/// `blob-storage-client`: `blobstorageclient`). Plain words are not repeated here (the word
/// scan counts them). ASCII only: identifiers are.
fn each_compound_word(text: &str, buf: &mut String, mut f: impl FnMut(&str)) {
    let b = text.as_bytes();
    // Camel parts: a capital right after a lowercase letter, found 8 bytes at a time.
    let mut i = 1;
    let mut done_to = 0;
    while i < b.len() {
        if i + 8 <= b.len() && !has_capital(&b[i..i + 8]) {
            i += 8;
            continue;
        }
        if i >= done_to && case_boundary(b, i) && b[i - 1].is_ascii_alphanumeric() {
            // The whole ASCII word around `i`.
            let mut s = i;
            while s > 0 && b[s - 1].is_ascii_alphanumeric() {
                s -= 1;
            }
            let mut e = i;
            while e < b.len() && b[e].is_ascii_alphanumeric() {
                e += 1;
            }
            let multibyte = (s > 0 && b[s - 1] >= 0x80) || b.get(e).is_some_and(|&c| c >= 0x80);
            if !multibyte {
                // `s` and `e` sit next to ASCII bytes or the ends: character boundaries.
                camel_parts(&text[s..e], |p| {
                    lower(p, buf);
                    f(buf);
                });
            }
            done_to = e;
            i = e;
            continue;
        }
        i += 1;
    }
    // Wholes of joined identifiers: runs of ASCII letters and digits joined by `.`, `-`, `_`.
    let mut next = 0;
    for p in memchr::memchr3_iter(b'.', b'-', b'_', b) {
        if p < next || p == 0 || !b[p - 1].is_ascii_alphanumeric() {
            continue;
        }
        if !b.get(p + 1).is_some_and(u8::is_ascii_alphanumeric) {
            continue;
        }
        let mut s = p;
        while s > 0 && b[s - 1].is_ascii_alphanumeric() {
            s -= 1;
        }
        let mut e = p;
        let mut parts = 1;
        while e < b.len() && joiner(b[e]) && b.get(e + 1).is_some_and(u8::is_ascii_alphanumeric) {
            e += 1;
            while e < b.len() && b[e].is_ascii_alphanumeric() {
                e += 1;
            }
            parts += 1;
        }
        next = e;
        let multibyte = (s > 0 && b[s - 1] >= 0x80) || b.get(e).is_some_and(|&c| c >= 0x80);
        if parts < 2 || multibyte {
            continue;
        }
        buf.clear();
        buf.extend(
            b[s..e]
                .iter()
                .filter(|c| c.is_ascii_alphanumeric())
                .map(|c| char::from(c.to_ascii_lowercase())),
        );
        f(buf);
    }
}

/// `true` when one of 8 bytes is an ASCII capital.
fn has_capital(b: &[u8]) -> bool {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut w = [0u8; 8];
    w.copy_from_slice(b);
    let x = u64::from_ne_bytes(w);
    let x7 = x & LOW7;
    // Per byte (no carries: each is below 0x80): the high bit set when >= 'A', and when > 'Z'.
    let ge_a = x7 + 0x3f3f_3f3f_3f3f_3f3f;
    let gt_z = x7 + 0x2525_2525_2525_2525;
    (ge_a & !gt_z & !x & HIGH) != 0
}

/// The wholes and acronyms a query's phrases stand for, as lowercased words: the words of each
/// run of two to four content words written one after the other (`Blob Storage Client`:
/// `blobstorageclient`, `storageclient`, ...), and, for runs of capitalised words, their
/// initials (`Event Grid`: `eg`).
fn phrase_words(query: &str) -> (Vec<String>, Vec<String>) {
    let mut words: Vec<&str> = Vec::new();
    each_raw_word(query, |w| words.push(w));
    let mut wholes = Vec::new();
    let mut acronyms = Vec::new();
    let mut buf = String::new();
    let content: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| {
            lower(w, &mut buf);
            !is_stop(&buf)
        })
        .collect();
    for n in 2..=4usize {
        for win in content.windows(n) {
            let mut whole = String::new();
            for w in win {
                lower(w, &mut buf);
                whole.push_str(&buf);
            }
            wholes.push(whole);
            let capitalised = win
                .iter()
                .all(|w| w.chars().next().is_some_and(char::is_uppercase));
            if capitalised {
                let initials: String = win
                    .iter()
                    .filter_map(|w| w.chars().next())
                    .flat_map(char::to_lowercase)
                    .collect();
                acronyms.push(initials);
            }
        }
    }
    (wholes, acronyms)
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

/// `true` when two different stems are forms of one word: one starts with the other (at least
/// four characters), the query's stem ends with the other (`subdirectori`/`directori`), or they
/// share a prefix of at least five characters covering most of the shorter one
/// (`licenc`/`licens`).
fn related(q: &str, t: &str) -> bool {
    if q == t {
        return false;
    }
    let (short, long) = if q.len() <= t.len() { (q, t) } else { (t, q) };
    if short.chars().count() < 4 {
        return false;
    }
    if long.starts_with(short) || (long == q && q.ends_with(t)) {
        return true;
    }
    let common = q.chars().zip(t.chars()).take_while(|(a, b)| a == b).count();
    common >= 5 && common * 5 >= short.chars().count() * 4
}

/// `true` for a byte that is part of a word: an ASCII letter or digit, or a byte of a
/// multi-byte character (runs holding those are split by `char::is_alphanumeric`).
fn word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b >= 0x80
}

/// `true` for a character that separates words (`!char::is_alphanumeric`, without the
/// Unicode table lookup for ASCII and the punctuation and arrows of running text: `—`, `’`,
/// `→`).
fn separates(c: char) -> bool {
    if c.is_ascii() {
        return !c.is_ascii_alphanumeric();
    }
    matches!(u32::from(c), 0x2000..=0x206F | 0x2190..=0x21FF) || !c.is_alphanumeric()
}

/// The position of the first byte of a multi-byte character in `b` from `from` on.
fn next_high(b: &[u8], from: usize) -> Option<usize> {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let word = |k: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[k..k + 8]);
        u64::from_ne_bytes(w)
    };
    let mut i = from;
    // 32 bytes at a time while they are all ASCII.
    while i + 32 <= b.len() && (word(i) | word(i + 8) | word(i + 16) | word(i + 24)) & HIGH == 0 {
        i += 32;
    }
    b.get(i..)?.iter().position(|&c| c >= 0x80).map(|k| i + k)
}

/// Calls `f` with each word of an ASCII-lowercased `text` that holds a multi-byte character
/// (runs of word bytes holding one, split by [`separates`], one character or more after the
/// first), lowercased into `buf` and not a stop word, with the byte where its run starts. What
/// [`Scorer`] reads one by one.
pub(crate) fn each_other_word(text: &str, buf: &mut String, mut f: impl FnMut(usize, &mut String)) {
    let b = text.as_bytes();
    if b.is_ascii() {
        return;
    }
    let mut i = 0;
    while let Some(hi) = next_high(b, i) {
        // Most of them are dashes, quotes and arrows between words.
        if let Some(c) = text.get(hi..).and_then(|t| t.chars().next())
            && separates(c)
            && (hi == 0 || !word_byte(b[hi - 1]))
            && b.get(hi + c.len_utf8()).is_none_or(|&n| !word_byte(n))
        {
            i = hi + c.len_utf8();
            continue;
        }
        let mut s = hi;
        while s > i && word_byte(b[s - 1]) {
            s -= 1;
        }
        let e = b[hi..]
            .iter()
            .position(|&c| !word_byte(c))
            .map_or(b.len(), |n| hi + n);
        // `s` and `e` sit next to ASCII bytes or the ends: character boundaries.
        for w in text.get(s..e).unwrap_or_default().split(separates) {
            if w.chars().nth(1).is_none() {
                continue;
            }
            lower(w, buf);
            if !is_stop(buf) {
                f(s, buf);
            }
        }
        i = e;
    }
}

/// Calls `f` with each ASCII word of an ASCII-lowercased `text` that [`Scorer`] may count
/// (two bytes or more, not a stop word): the runs of word bytes holding no multi-byte
/// character.
pub(crate) fn each_ascii_word(text: &str, mut f: impl FnMut(&str)) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !word_byte(b[i]) {
            i += 1;
            continue;
        }
        let s = i;
        let mut ascii = true;
        while i < b.len() && word_byte(b[i]) {
            ascii &= b[i] < 0x80;
            i += 1;
        }
        let w = &b[s..i];
        // `s` and `i` sit next to ASCII bytes or the ends: character boundaries.
        if ascii && w.len() >= 2 && !is_stop_ascii(w) {
            f(text.get(s..i).unwrap_or_default());
        }
    }
}

/// Calls `f` with each compound word of `text` [`Scorer`] may count ([`each_compound_word`],
/// stop words left out), lowercased.
pub(crate) fn each_compound(text: &str, buf: &mut String, mut f: impl FnMut(&str)) {
    each_compound_word(text, buf, |w| {
        if !is_stop(w) {
            f(w);
        }
    });
}

/// The longest stop word, in bytes: longer words are never looked up.
const MAX_STOP: usize = 6;

/// An ASCII word of at most eight bytes, lowercased, packed big-endian into a `u64` (zero
/// padded), so packed words sort as the words do.
const fn pack(w: &[u8]) -> u64 {
    let mut v = 0u64;
    let mut i = 0;
    while i < 8 {
        v <<= 8;
        if i < w.len() {
            v |= w[i].to_ascii_lowercase() as u64;
        }
        i += 1;
    }
    v
}

/// [`STOP`], packed (sorted, as [`STOP`] is).
const STOP_PACKED: [u64; STOP.len()] = {
    let mut t = [0u64; STOP.len()];
    let mut i = 0;
    while i < STOP.len() {
        t[i] = pack(STOP[i].as_bytes());
        i += 1;
    }
    t
};

/// `true` when the ASCII word `w` (any case) is a stop word.
fn is_stop_ascii(w: &[u8]) -> bool {
    w.len() <= MAX_STOP && STOP_PACKED.binary_search(&pack(w)).is_ok()
}

/// The starts of the words whose stems may count for a query stem `p`: its first three
/// characters (two for a stem of two, or of three ending in an `e` the stemmer may have added:
/// `use` from `using`), with `i` and `y` standing for each other (`dying`/`die`,
/// `skies`/`sky`). A stem keeps its word's first characters otherwise, so a word starting with
/// none of these is never stemmed.
fn starts_of(p: &str, out: &mut Vec<Vec<u8>>) {
    let b = p.as_bytes();
    if b.len() < 2 || !b[..2].iter().all(u8::is_ascii_alphanumeric) {
        return;
    }
    // A stem of three ending in `e` may have gained it (`use` from `using`).
    let n = if b.len() >= 3 && b[2].is_ascii_alphanumeric() && !(b.len() == 3 && b[2] == b'e') {
        3
    } else {
        2
    };
    let mut acc: Vec<Vec<u8>> = vec![Vec::new()];
    for &c in &b[..n] {
        let variants: &[u8] = match c {
            b'i' | b'y' => b"iy",
            _ => std::slice::from_ref(&c),
        };
        acc = acc
            .iter()
            .flat_map(|a| {
                variants.iter().map(move |&v| {
                    let mut a = a.clone();
                    a.push(v);
                    a
                })
            })
            .collect();
    }
    out.extend(acc);
}

/// A query ready to score documents with Okapi BM25 (k1 = 1.2, b = 0.75), reading each
/// document once. Each term's IDF is scaled by its rarity relative to the query's rarest term
/// present in the documents (IDF / that IDF): rare words decide, shared common words do not.
///
/// Only the query's terms are counted: a document word counts when its stem is one of the
/// query's stems (weight 1.0), the short or long form of one (`PR` and `pull request`,
/// `repo`, `docs`, `config`, ...: 0.8), or a near form of one ([`related`]: 0.5). Candidate
/// words are found by their first characters ([`starts_of`]) with one multi-pattern search
/// over the lowercased text; each distinct candidate is stemmed once per query. A document's
/// length is its size in bytes (BM25 only compares it with the average).
pub(crate) struct Scorer {
    stems: Vec<String>,
    expansions: Vec<String>,
    /// Stems of the query's compound names written as one word (its phrases joined, the parts of
    /// its camelCase words): full weight.
    compounds: Vec<String>,
    /// Stems of the initials of the query's capitalised phrases (`Event Grid`: `eg`): weaker.
    acronyms: Vec<String>,
    /// The first two bytes of every word that may count (bit `b0 * 256 + b1`), for the compound
    /// scan.
    prefixes: Vec<u64>,
    /// The search for `patterns`, built when a text is first searched: a scorer fed from
    /// search indexes never needs it. `None` when there is nothing to search for.
    starts: Option<AhoCorasick>,
    /// Whether `starts` was built.
    starts_built: bool,
    /// The patterns `starts` searches for (sorted): an ASCII word counts only when one of them
    /// starts it.
    patterns: Vec<Vec<u8>>,
    /// A query stem too short to search for by its start (one character): every word is read.
    every_word: bool,
    stemmer: Stemmer,
    /// Lowercased word -> the term it counts for, if any.
    words: FnvMap<String, Option<u32>>,
    /// Stem -> term.
    terms: FnvMap<String, u32>,
    weights: Vec<f64>,
    postings: Vec<Vec<(u32, u32)>>,
    lens: Vec<u64>,
    /// Texts waiting to be searched, each followed by a line end: where each starts, its
    /// document and how many times its words count.
    batch: String,
    segments: Vec<(usize, u32, u32)>,
    buf: String,
}

/// A word of a search index that counts for the query: when [`Scorer::feed`] would first meet
/// it (stage, list, text, position in the list), its document and word, its stem and weight.
struct Found {
    first: (u64, u8, u64, u32),
    doc: usize,
    word: usize,
    stem: String,
    weight: f64,
}

/// The size of the batches [`Scorer::feed`] searches at once.
const BATCH: usize = 64 * 1024;

impl Scorer {
    /// A scorer for `query`, with no documents yet.
    pub(crate) fn new(query: &str) -> Self {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut stems = tokenize(query);
        // The parts of the query's camelCase words ask for the parts too.
        let mut buf = String::new();
        let mut parts = Vec::new();
        each_raw_word(query, |w| {
            if w.is_ascii() {
                camel_parts(w, |p| {
                    lower(p, &mut buf);
                    if !is_stop(&buf) {
                        parts.push(stemmer.stem(&buf).into_owned());
                    }
                });
            }
        });
        stems.extend(parts);
        stems.sort();
        stems.dedup();
        let (wholes, initials) = phrase_words(query);
        let stem_all = |ws: Vec<String>| {
            let mut out: Vec<String> = ws
                .iter()
                .map(|w| stemmer.stem(w).into_owned())
                .filter(|w| w.len() >= 2 && !stems.contains(w))
                .collect();
            out.sort();
            out.dedup();
            out
        };
        let compounds = stem_all(wholes);
        let acronyms: Vec<String> = stem_all(initials)
            .into_iter()
            .filter(|a| !compounds.contains(a))
            .collect();
        let mut expansions: Vec<String> = Vec::new();
        for (short, long) in ABBREVIATIONS {
            if stems.iter().any(|q| q == short) {
                expansions.extend(long.iter().map(|l| (*l).to_owned()));
            }
            if long.iter().all(|l| stems.iter().any(|q| q == l)) {
                expansions.push((*short).to_owned());
            }
        }
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        for q in stems
            .iter()
            .chain(&expansions)
            .chain(&compounds)
            .chain(&acronyms)
        {
            starts_of(q, &mut patterns);
        }
        // The stems a query stem ends with (`subdirectori` asks for `directori`).
        for q in &stems {
            for (i, _) in q.char_indices().skip(1) {
                if q[i..].chars().count() >= 4 {
                    starts_of(&q[i..], &mut patterns);
                }
            }
        }
        patterns.sort();
        patterns.dedup();
        let mut prefixes = vec![0u64; 1024];
        for p in &patterns {
            if let [a, b, ..] = p[..] {
                let bit = usize::from(a) * 256 + usize::from(b);
                prefixes[bit / 64] |= 1 << (bit % 64);
            }
        }
        let every_word = stems.iter().chain(&expansions).any(|q| q.len() < 2);
        Self {
            stems,
            expansions,
            compounds,
            acronyms,
            prefixes,
            starts: None,
            starts_built: false,
            patterns,
            every_word,
            stemmer,
            words: FnvMap::default(),
            terms: FnvMap::default(),
            weights: Vec::new(),
            postings: Vec::new(),
            lens: Vec::new(),
            batch: String::new(),
            segments: Vec::new(),
            buf: String::new(),
        }
    }

    /// The weight of a document stem for this query (0 when it does not count).
    fn weigh(&self, stem: &str) -> f64 {
        if self.stems.iter().any(|q| q == stem) || self.compounds.iter().any(|q| q == stem) {
            1.0
        } else if self.expansions.iter().any(|q| q == stem) {
            0.8
        } else if self.acronyms.iter().any(|q| q == stem) {
            0.4
        } else if self.stems.iter().any(|q| related(q, stem)) {
            0.5
        } else {
            0.0
        }
    }

    /// The term `self.buf` (a lowercased word) counts for, stemming it the first time.
    fn term_of_buf(&mut self) -> Option<u32> {
        if let Some(t) = self.words.get(self.buf.as_str()) {
            return *t;
        }
        let stem = self.stemmer.stem(&self.buf);
        let weight = self.weigh(&stem);
        let term = if weight > 0.0 {
            Some(match self.terms.get(stem.as_ref()) {
                Some(&t) => t,
                None => {
                    let t = u32::try_from(self.weights.len()).unwrap_or(u32::MAX);
                    self.terms.insert(stem.into_owned(), t);
                    self.weights.push(weight);
                    self.postings.push(Vec::new());
                    t
                }
            })
        } else {
            None
        };
        self.words.insert(self.buf.clone(), term);
        term
    }

    /// Counts the lowercased word in `self.buf` for the current document.
    fn count_buf(&mut self, times: u32) {
        let Some(doc) = self.lens.len().checked_sub(1) else {
            return;
        };
        self.count_buf_in(u32::try_from(doc).unwrap_or(u32::MAX), times);
    }

    /// Counts the lowercased word in `self.buf` for document `doc`.
    fn count_buf_in(&mut self, doc: u32, times: u32) {
        let Some(term) = self.term_of_buf() else {
            return;
        };
        let Some(list) = self.postings.get_mut(term as usize) else {
            return;
        };
        match list.last_mut() {
            Some((d, tf)) if *d == doc => *tf += times,
            _ => list.push((doc, times)),
        }
    }

    /// Starts the next document; [`Scorer::feed`] adds its text.
    pub(crate) fn start(&mut self) {
        self.lens.push(0);
    }

    /// Adds `text` to the current document, each word counting `times`.
    ///
    /// Texts are searched in batches of about [`BATCH`] bytes (one search per batch costs far
    /// less than one per text, and the batch stays in cache).
    pub(crate) fn feed(&mut self, text: &str, times: u32) {
        let Some(doc) = self.lens.len().checked_sub(1) else {
            return;
        };
        if let Some(l) = self.lens.last_mut() {
            *l += text.len() as u64 * u64::from(times);
        }
        if self.stems.is_empty() {
            return;
        }
        self.count_compounds(text, times);
        if self.every_word {
            self.count_every_word(text, times);
            return;
        }
        if !self.batch.is_empty() && self.batch.len() + text.len() >= BATCH {
            self.flush();
        }
        let doc = u32::try_from(doc).unwrap_or(u32::MAX);
        self.segments.push((self.batch.len(), doc, times));
        self.batch.push_str(text);
        // A separator, so no word runs from one text into the next.
        self.batch.push('\n');
    }

    /// Counts the words of the batch.
    fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let mut batch = std::mem::take(&mut self.batch);
        let segments = std::mem::take(&mut self.segments);
        batch.make_ascii_lowercase();
        let b = batch.as_bytes();
        // The segment holding byte `at` (segments are in order, the first starts at 0).
        let segment = |at: usize| {
            let k = segments.partition_point(|&(start, _, _)| start <= at);
            segments[k.saturating_sub(1)]
        };
        // ASCII words, found by their first characters. Building the search cannot fail: its
        // patterns are of two or three bytes, at most some 47,000 of them (every start of
        // letters and digits), far below the automaton's limits.
        if !self.starts_built {
            self.starts_built = true;
            self.starts = (!self.patterns.is_empty())
                .then(|| {
                    AhoCorasick::builder()
                        .match_kind(MatchKind::LeftmostLongest)
                        .build(&self.patterns)
                        .ok()
                })
                .flatten();
        }
        if let Some(ac) = self.starts.take() {
            let mut k = 0;
            for m in ac.find_iter(b) {
                let s = m.start();
                if s > 0 && word_byte(b[s - 1]) {
                    continue;
                }
                let e = b[s..]
                    .iter()
                    .position(|&c| !word_byte(c))
                    .map_or(b.len(), |n| s + n);
                let w = &b[s..e];
                // Words holding other characters are read below.
                if w.len() < 2 || !w.is_ascii() || is_stop_ascii(w) {
                    continue;
                }
                while k + 1 < segments.len() && segments[k + 1].0 <= s {
                    k += 1;
                }
                let (_, doc, times) = segments[k];
                self.buf.clear();
                // `s` and `e` sit next to ASCII bytes or the ends: character boundaries.
                self.buf.push_str(&batch[s..e]);
                self.count_buf_in(doc, times);
            }
            self.starts = Some(ac);
        }
        // Runs holding other characters: split by `char::is_alphanumeric`, every word looked up.
        let mut buf = std::mem::take(&mut self.buf);
        each_other_word(&batch, &mut buf, |s, buf| {
            std::mem::swap(&mut self.buf, buf);
            let (_, doc, times) = segment(s);
            self.count_buf_in(doc, times);
            std::mem::swap(&mut self.buf, buf);
        });
        self.buf = buf;
        batch.clear();
        self.batch = batch;
        let mut segments = segments;
        segments.clear();
        self.segments = segments;
    }

    /// [`Scorer::feed`] without the search by first characters: every word is stemmed (what
    /// the search must agree with).
    #[cfg(test)]
    fn feed_every_word(&mut self, text: &str, times: u32) {
        if let Some(l) = self.lens.last_mut() {
            *l += text.len() as u64 * u64::from(times);
        }
        let every = std::mem::replace(&mut self.every_word, true);
        self.count_compounds(text, times);
        self.every_word = every;
        self.count_every_word(text, times);
    }

    /// Counts the parts and wholes of the compound identifiers of `text`
    /// ([`each_compound_word`]) that may count for the query.
    fn count_compounds(&mut self, text: &str, times: u32) {
        let mut words: Vec<String> = Vec::new();
        let prefixes = &self.prefixes;
        let every = self.every_word;
        each_compound_word(text, &mut String::new(), |w| {
            let b = w.as_bytes();
            let wanted = every
                || matches!(b, [x, y, ..] if {
                    let bit = usize::from(*x) * 256 + usize::from(*y);
                    prefixes[bit / 64] & (1 << (bit % 64)) != 0
                });
            if wanted && !is_stop(w) {
                words.push(w.to_owned());
            }
        });
        for w in words {
            self.buf = w;
            self.count_buf(times);
        }
    }

    /// Counts every word of `text` (no search by first characters).
    fn count_every_word(&mut self, text: &str, times: u32) {
        let mut words = Vec::new();
        each_word(text, &mut String::new(), |w| {
            if !is_stop(w) {
                words.push(w.to_owned());
            }
        });
        for w in words {
            self.buf = w;
            self.count_buf(times);
        }
    }

    /// Whether [`Scorer::feed_index`] can stand for [`Scorer::feed`] with this query (not when
    /// every word is read: a query stem of one character).
    pub(crate) fn takes_index(&self) -> bool {
        !self.every_word
    }

    /// Whether the ASCII word `w` starts with one of the patterns (what the search by first
    /// characters finds).
    fn starts_ascii(&self, w: &[u8]) -> bool {
        // Every pattern's first two bytes are in `prefixes`: most words stop there.
        self.wanted_compound(w)
            && [2, 3].iter().any(|&n| {
                w.get(..n)
                    .is_some_and(|p| self.patterns.binary_search_by(|q| q[..].cmp(p)).is_ok())
            })
    }

    /// Whether a compound word may count (its first two bytes start a pattern).
    fn wanted_compound(&self, w: &[u8]) -> bool {
        matches!(w, [x, y, ..] if {
            let bit = usize::from(*x) * 256 + usize::from(*y);
            self.prefixes[bit / 64] & (1 << (bit % 64)) != 0
        })
    }

    /// In which of an index word's lists (`lists`: bit `k` for list `k`) the word may count:
    /// as a compound word, as an ASCII word found by its first characters, as a word holding
    /// other characters (always looked up).
    fn wanted_lists(&self, word: &str, lists: u8) -> [bool; 3] {
        let b = word.as_bytes();
        [
            lists & 1 != 0 && self.wanted_compound(b),
            lists & 2 != 0 && self.starts_ascii(b),
            lists & 4 != 0,
        ]
    }

    /// Starts one document per unit of `docs` (in order) and counts their words from the
    /// search indexes, as [`Scorer::feed`] would from their texts: the same terms, numbered in
    /// the same order, with the same counts and lengths (so the same scores, to the bit). Only
    /// the words whose first characters the query searches for (and the words holding other
    /// characters) are looked at. `false` when an index cannot be read after all: the caller
    /// then scores a new `Scorer` from the texts. The caller checked the indexes describe the
    /// units and [`Scorer::takes_index`].
    pub(crate) fn feed_index(&mut self, docs: &[&SearchIndex]) -> bool {
        // Every text in pool order: its scorer document, weight and when its words count.
        let mut first_text = Vec::with_capacity(docs.len());
        let mut texts: Vec<(u32, u32)> = Vec::new();
        for idx in docs {
            first_text.push(texts.len());
            for u in 0..idx.units() {
                self.start();
                let doc = u32::try_from(self.lens.len() - 1).unwrap_or(u32::MAX);
                let (recs, _) = idx.unit_texts(u);
                for t in recs {
                    if let Some(l) = self.lens.last_mut() {
                        *l += t.len * u64::from(t.times);
                    }
                    texts.push((doc, t.times));
                }
            }
        }
        if self.stems.is_empty() {
            return true;
        }
        // When each text's ASCII and other words are counted: the batch `feed` flushes at
        // text `g` (after counting the compounds of `g`) is stage `2g + 1`; the last, `2n + 1`.
        let mut flushed_at = vec![0u64; texts.len()];
        let mut pending_from = 0usize;
        let mut pending_len = 0u64;
        let mut g = 0usize;
        for idx in docs {
            for t in &idx.texts {
                if pending_len > 0 && pending_len + t.len >= BATCH as u64 {
                    for f in &mut flushed_at[pending_from..g] {
                        *f = 2 * g as u64 + 1;
                    }
                    pending_from = g;
                    pending_len = 0;
                }
                pending_len += t.len + 1;
                g += 1;
            }
        }
        for f in &mut flushed_at[pending_from..g] {
            *f = 2 * g as u64 + 1;
        }
        // The words that count, with the moment each is first met.
        let mut found: Vec<Found> = Vec::new();
        for (di, idx) in docs.iter().enumerate() {
            for w in 0..idx.words() {
                let (word, lists) = idx.word(w);
                let wanted = self.wanted_lists(word, lists);
                if !wanted.contains(&true) {
                    continue;
                }
                let stem = self.stemmer.stem(word);
                let weight = self.weigh(&stem);
                if weight <= 0.0 {
                    continue;
                }
                let base = first_text[di];
                let mut first: Option<(u64, u8, u64, u32)> = None;
                let ok = idx.occurrences(w, |o| {
                    if !wanted[usize::from(o.list)] {
                        return;
                    }
                    let g = (base + o.text as usize) as u64;
                    let stage = if o.list == 0 {
                        2 * g
                    } else {
                        flushed_at.get(g as usize).copied().unwrap_or(u64::MAX)
                    };
                    let key = (stage, o.list, g, o.pos);
                    if first.is_none_or(|f| key < f) {
                        first = Some(key);
                    }
                });
                if !ok {
                    return false;
                }
                if let Some(first) = first {
                    found.push(Found {
                        first,
                        doc: di,
                        word: w,
                        stem: stem.into_owned(),
                        weight,
                    });
                }
            }
        }
        // Terms are numbered as `feed` meets them.
        found.sort_by_key(|f| f.first);
        for Found {
            doc: di,
            word: w,
            stem,
            weight,
            ..
        } in found
        {
            let term = match self.terms.get(stem.as_str()) {
                Some(&t) => t,
                None => {
                    let t = u32::try_from(self.weights.len()).unwrap_or(u32::MAX);
                    self.terms.insert(stem, t);
                    self.weights.push(weight);
                    self.postings.push(Vec::new());
                    t
                }
            };
            let Some(idx) = docs.get(di) else {
                return false;
            };
            let (word, lists) = idx.word(w);
            let wanted = self.wanted_lists(word, lists);
            let base = first_text[di];
            let Some(list) = self.postings.get_mut(term as usize) else {
                return false;
            };
            let ok = idx.occurrences(w, |o| {
                if !wanted[usize::from(o.list)] {
                    return;
                }
                if let Some(&(doc, times)) = texts.get(base + o.text as usize) {
                    list.push((doc, o.count.saturating_mul(times)));
                }
            });
            if !ok {
                return false;
            }
        }
        true
    }

    /// The BM25 score of every document, in the order they were started.
    pub(crate) fn scores(&mut self) -> Vec<f64> {
        self.flush();
        // A batch counts its ASCII words before the others: a document may be listed twice.
        for list in &mut self.postings {
            if list.windows(2).any(|w| w[0].0 >= w[1].0) {
                list.sort_by_key(|&(doc, _)| doc);
                list.dedup_by(|later, first| {
                    let same = later.0 == first.0;
                    if same {
                        first.1 += later.1;
                    }
                    same
                });
            }
        }
        let n = self.lens.len() as f64;
        let avg = if self.lens.is_empty() {
            0.0
        } else {
            self.lens.iter().map(|&l| l as f64).sum::<f64>() / n
        };
        let mut scores = vec![0.0; self.lens.len()];
        let idf_of = |df: usize| ((n - df as f64 + 0.5) / (df as f64 + 0.5) + 1.0).ln();
        // The rarest of the query's terms in these documents (the squad's own files) sets the
        // scale: a term weighs by its IDF times its rarity relative to that one, so sections
        // sharing only the question's common words fall behind one sharing its rare word.
        let rarest = self
            .postings
            .iter()
            .filter(|l| !l.is_empty())
            .map(|l| idf_of(l.len()))
            .fold(0.0f64, f64::max);
        for (list, weight) in self.postings.iter().zip(&self.weights) {
            let raw = idf_of(list.len());
            let rarity = if rarest > 0.0 { raw / rarest } else { 1.0 };
            let idf = raw * rarity * weight;
            for &(doc, tf) in list {
                let d = doc as usize;
                let norm = if avg > 0.0 {
                    K1 * (1.0 - B + B * self.lens[d] as f64 / avg)
                } else {
                    K1
                };
                let f = f64::from(tf);
                scores[d] += idf * f * (K1 + 1.0) / (f + norm);
            }
        }
        scores
    }
}

/// Okapi BM25 over a fixed set of documents (k1 = 1.2, b = 0.75), each term's IDF scaled by
/// its rarity relative to the query's rarest term in these documents. Terms come from
/// [`tokenize`]'s rules; a query also matches the short and long forms of developer
/// abbreviations (`PR`/`pull request`, `config`/`configuration`, ...) and near forms of its
/// words (`licence`/`license`, `subdirectory`/`directory`) at a lower weight. Scoring reads
/// each document once and counts only the query's terms.
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
    docs: Vec<String>,
}

impl Bm25 {
    /// Indexes `docs` (their order is the index used in results).
    pub fn new<I, S>(docs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Self {
            docs: docs.into_iter().map(|d| d.as_ref().to_owned()).collect(),
        }
    }

    /// The BM25 score of every document for `query`, in document order.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let mut s = Scorer::new(query);
        for d in &self.docs {
            s.start();
            s.feed(d, 1);
        }
        s.scores()
    }

    /// Documents with a positive score, best first (ties keep document order).
    pub fn rank(&self, query: &str) -> Vec<(usize, f64)> {
        rank_scores(self.scores(query))
    }
}

/// The indexes of the positive `scores` with their scores, best first (ties keep index order).
pub(crate) fn rank_scores(scores: Vec<f64>) -> Vec<(usize, f64)> {
    let mut r: Vec<(usize, f64)> = scores
        .into_iter()
        .enumerate()
        .filter(|(_, s)| *s > 0.0)
        .collect();
    r.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_follow_the_bm25_formula() {
        let docs = ["alpha beta", "alpha alpha gamma", "delta"];
        let idx = Bm25::new(docs);
        let s = idx.scores("alpha");
        // n = 3, df = 2: idf = ln((3 - 2 + 0.5) / (2 + 0.5) + 1); lengths in bytes.
        let idf = (1.5f64 / 2.5 + 1.0).ln();
        let avg = (10.0 + 17.0 + 5.0) / 3.0;
        let want =
            |tf: f64, len: f64| idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg));
        assert!((s[0] - want(1.0, 10.0)).abs() < 1e-12);
        assert!((s[1] - want(2.0, 17.0)).abs() < 1e-12);
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
    fn compound_words_are_the_parts_and_the_wholes() {
        let words = |t: &str| {
            let mut out = Vec::new();
            each_compound_word(t, &mut String::new(), |w| out.push(w.to_owned()));
            out
        };
        assert_eq!(
            words("use BlobStorageClient now"),
            ["blob", "storage", "client"]
        );
        assert_eq!(words("an HTTPServer, a getX"), ["http", "server", "get"]);
        assert_eq!(
            words("Contoso.Extensions.Http and queue-depth and retry_ms."),
            ["contosoextensionshttp", "queuedepth", "retryms"]
        );
        // Plain words, sentence ends and list markers are not compounds; nor is text next to
        // other scripts.
        assert!(words("The end. Next - item; k8s v2 API ÉtéX naïveCase").is_empty());
        let mut parts = Vec::new();
        camel_parts("aBcD", |p| parts.push(p));
        assert_eq!(parts, ["Bc"], "one-letter parts are skipped");
    }

    #[test]
    fn query_phrases_give_wholes_and_initials() {
        let (wholes, initials) = phrase_words("why is the Event Grid slow");
        assert_eq!(wholes, ["eventgrid", "gridslow", "eventgridslow"]);
        assert_eq!(initials, ["eg"]);
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

    #[test]
    fn stop_words_are_short_lowercase_ascii() {
        assert!(
            STOP.iter()
                .all(|w| w.len() <= MAX_STOP && w.bytes().all(|b| b.is_ascii_lowercase()))
        );
        assert!(is_stop_ascii(b"The") && is_stop_ascii(b"SHOULD") && !is_stop_ascii(b"theme"));
    }

    /// Equal up to the order terms are summed in.
    fn same(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| (x - y).abs() <= 1e-9 * x.abs().max(1.0))
    }

    const WORDS: &[&str] = &[
        "dying",
        "die",
        "dies",
        "lying",
        "tie",
        "tying",
        "skies",
        "sky",
        "using",
        "use",
        "used",
        "uses",
        "crying",
        "cry",
        "cries",
        "happy",
        "happiness",
        "happily",
        "subdirectory",
        "subdirectories",
        "directory",
        "directories",
        "dir",
        "dirs",
        "PRs",
        "PR",
        "pull",
        "pulled",
        "request",
        "requests",
        "repo",
        "repositories",
        "config",
        "configuration",
        "licence",
        "license",
        "licensing",
        "deploy",
        "deploys",
        "deployment",
        "timeout",
        "timeouts",
        "time",
        "out",
        "early",
        "earlier",
        "only",
        "gently",
        "news",
        "ugly",
        "idly",
        "symlink",
        "symlinks",
        "link",
        "links",
        "k8s",
        "kubernetes",
        "docs",
        "documentation",
        "naïve",
        "naive",
        "café",
        "Überprüfung",
        "2026",
        "v0",
        "8",
        "x",
        "is",
        "the",
        "ci",
        "continuous",
        "integration",
        "environment",
        "env",
        "authentication",
        "auth",
        "yes",
        "yielding",
        "ying",
        "yy",
        "iyi",
        "→deploy",
        "naïve-deploy",
        "édeploy",
        "deploy—time",
        "Ünit",
        "request→pull",
        "x→y",
        "out",
        "outs",
        "outage",
        "tie",
        "ties",
        "hoping",
        "hope",
        "ate",
        "bled",
        "able",
        "ring",
        "rings",
        "sing",
        "singing",
        "ye",
        "yes",
        "ion",
        "ions",
        "oed",
    ];

    #[test]
    fn separators_are_the_non_alphanumeric_characters() {
        for c in (0..=0x2FFF_u32).filter_map(char::from_u32) {
            assert_eq!(separates(c), !c.is_alphanumeric(), "{c:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, ..Default::default() })]

        /// The search by first characters only skips work: scores are the same as with every word
        /// stemmed.
        #[test]
        fn the_search_by_first_characters_never_changes_a_score(
            query in proptest::collection::vec(0..WORDS.len(), 1..5),
            docs in proptest::collection::vec(proptest::collection::vec(0..WORDS.len(), 0..12), 1..6),
            upper in proptest::prelude::any::<bool>(),
        ) {
            let q: Vec<&str> = query.iter().map(|&i| WORDS[i]).collect();
            let q = q.join(" ");
            let docs: Vec<String> = docs
                .iter()
                .map(|d| {
                    let t = d.iter().map(|&i| WORDS[i]).collect::<Vec<_>>().join(" ");
                    if upper { t.to_uppercase() } else { t }
                })
                .collect();
            let mut fast = Scorer::new(&q);
            let mut slow = Scorer::new(&q);
            for d in &docs {
                fast.start();
                fast.feed(d, 1);
                slow.start();
                slow.feed_every_word(d, 1);
            }
            proptest::prop_assert!(same(&fast.scores(), &slow.scores()), "{} / {:?}", q, docs);
        }

        /// The same on random words: the stemmer's rules, not a word list, decide.
        #[test]
        fn the_search_by_first_characters_never_changes_a_score_on_random_words(
            query in "[a-zA-Z]{1,9}( [a-zA-Z]{1,9}){0,3}",
            docs in proptest::collection::vec("[a-zA-Zé0-9]{1,12}([ ,.(`-][a-zA-Z0-9]{1,12}){0,15}", 1..6),
        ) {
            let mut fast = Scorer::new(&query);
            let mut slow = Scorer::new(&query);
            for d in &docs {
                fast.start();
                fast.feed(d, 1);
                slow.start();
                slow.feed_every_word(d, 1);
            }
            proptest::prop_assert!(same(&fast.scores(), &slow.scores()), "{} / {:?}", query, docs);
        }
    }
}
