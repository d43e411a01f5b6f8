//! The search index of a memory document: what a spawn's relevance scoring reads of it, worked
//! out once when the document is written instead of at every spawn.
//!
//! The index is **derived and never authoritative**: it names the text it was built from (its
//! length and a 64-bit hash), the crate version and the format version, and a reader that
//! finds anything else (a missing, stale, truncated, corrupt or foreign index) takes the full
//! path, with the same result. A read-only spawn never writes one.
//!
//! For each section a spawn offers to selection (the units `render` cuts a cold, archive or
//! wiki document into), in order, the index holds each text the scorer reads (heading, body,
//! title, chunk) with its length, how many times its words count, and its words as the scorer
//! meets them, each list in the order of its first occurrence with its count: the compound
//! words (camelCase parts, joined identifiers), the ASCII words, and the words holding other
//! characters, all lowercased, stop words left out. Scoring a query then stems only the
//! distinct words whose first characters match the query's, and counts the others without
//! reading the text ([`crate::bm25`]).
//!
//! The format (all integers LEB128 unless said): the magic `SQMIDX`, the format version (one
//! byte), the crate version (length, bytes), the text's length and hash (8 bytes each, little
//! endian), the vocabulary (count; per word its length and UTF-8 bytes), the units (count; per
//! unit its number of texts; per text its length, its weight, the lengths of its three word
//! lists, then the `(word, count)` pairs of the lists in turn), and the hash of everything
//! before it (8 bytes, little endian).

use std::hash::BuildHasher;

use crate::bm25::{each_ascii_word, each_compound, each_other_word};
use crate::render::{Source, ranked_units};
use crate::store::Tier;

/// The magic bytes an index starts with.
const MAGIC: &[u8; 6] = b"SQMIDX";
/// The format version; any change to the layout or to what is indexed bumps it.
const FORMAT: u8 = 1;
/// The largest index a reader accepts, in bytes (a larger file is ignored, not read).
pub(crate) const MAX_INDEX_BYTES: u64 = 4 * crate::store::MAX_FILE_BYTES;

/// The 64-bit hash an index names its text and itself by (foldhash, fixed seed: not
/// cryptographic; a text edited by hand that collides is a 2^-64 accident).
pub(crate) fn hash(bytes: &[u8]) -> u64 {
    foldhash::fast::FixedState::with_seed(0x5351_4d49_4458_0001).hash_one(bytes)
}

/// One text of a unit as the scorer reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TextRec {
    /// Its length in bytes.
    pub(crate) len: u64,
    /// How many times its words count.
    pub(crate) times: u32,
    /// Its word lists as ranges of [`SearchIndex::pairs`]: compound words `at[0]..at[1]`,
    /// ASCII words `at[1]..at[2]`, other words `at[2]..at[3]`.
    pub(crate) at: [u32; 4],
}

/// A decoded, validated search index of one document (see the module documentation).
#[derive(Debug, Clone, Default)]
pub(crate) struct SearchIndex {
    /// The words, one after the other.
    blob: String,
    /// Where each word ends in `blob` (word `i` is `ends[i - 1]..ends[i]`).
    ends: Vec<u32>,
    /// Where each unit's texts start in `texts` (one more than the units).
    units: Vec<u32>,
    pub(crate) texts: Vec<TextRec>,
    /// `(word, count)`.
    pub(crate) pairs: Vec<(u32, u32)>,
}

impl SearchIndex {
    /// The number of words in the vocabulary.
    pub(crate) fn words(&self) -> usize {
        self.ends.len()
    }

    /// Word `i` of the vocabulary (empty when out of range, which validation excludes).
    pub(crate) fn word(&self, i: usize) -> &str {
        let start = match i.checked_sub(1) {
            Some(p) => self.ends.get(p).copied().unwrap_or(0),
            None => 0,
        } as usize;
        let end = self.ends.get(i).copied().unwrap_or(0) as usize;
        self.blob.get(start..end).unwrap_or_default()
    }

    /// The number of units.
    pub(crate) fn units(&self) -> usize {
        self.units.len().saturating_sub(1)
    }

    /// The texts of unit `u`.
    pub(crate) fn unit_texts(&self, u: usize) -> &[TextRec] {
        let (Some(&s), Some(&e)) = (self.units.get(u), self.units.get(u + 1)) else {
            return &[];
        };
        self.texts.get(s as usize..e as usize).unwrap_or_default()
    }

    /// Decodes `bytes` as the index of `text`: `None` when it is not one (another text,
    /// another crate or format version, truncated, corrupt). Never panics, whatever the bytes.
    pub(crate) fn decode(bytes: &[u8], text: &str) -> Option<Self> {
        let body_len = bytes.len().checked_sub(8)?;
        let (body, sum) = bytes.split_at(body_len);
        if u64::from_le_bytes(sum.try_into().ok()?) != hash(body) {
            return None;
        }
        let mut r = Reader { b: body, at: 0 };
        if r.take(MAGIC.len())? != MAGIC || r.byte()? != FORMAT {
            return None;
        }
        let version_len = r.len()?;
        if r.take(version_len)? != env!("CARGO_PKG_VERSION").as_bytes() {
            return None;
        }
        if r.u64()? != text.len() as u64 || r.u64()? != hash(text.as_bytes()) {
            return None;
        }
        let words = r.count()?;
        let mut blob = Vec::new();
        let mut ends = Vec::with_capacity(words);
        for _ in 0..words {
            let n = r.len()?;
            blob.extend_from_slice(r.take(n)?);
            ends.push(u32::try_from(blob.len()).ok()?);
        }
        // One check for the whole vocabulary; then every word's ends must be boundaries.
        let blob = String::from_utf8(blob).ok()?;
        if !ends.iter().all(|&e| blob.is_char_boundary(e as usize)) {
            return None;
        }
        let unit_count = r.count()?;
        let mut units = Vec::with_capacity(unit_count + 1);
        let mut texts = Vec::new();
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        units.push(0);
        for _ in 0..unit_count {
            let n = r.count()?;
            for _ in 0..n {
                let len = r.u64_var()?;
                let times = u32::try_from(r.u64_var()?).ok()?;
                let lists = [r.count()?, r.count()?, r.count()?];
                let mut at = [0u32; 4];
                at[0] = u32::try_from(pairs.len()).ok()?;
                for (k, &m) in lists.iter().enumerate() {
                    for _ in 0..m {
                        let w = u32::try_from(r.u64_var()?).ok()?;
                        let c = u32::try_from(r.u64_var()?).ok()?;
                        if w as usize >= words || c == 0 {
                            return None;
                        }
                        pairs.push((w, c));
                    }
                    at[k + 1] = u32::try_from(pairs.len()).ok()?;
                }
                texts.push(TextRec { len, times, at });
            }
            units.push(u32::try_from(texts.len()).ok()?);
        }
        if r.at != body.len() {
            return None;
        }
        Some(Self {
            blob,
            ends,
            units,
            texts,
            pairs,
        })
    }
}

/// A bounds-checked reader of an index's bytes.
struct Reader<'b> {
    b: &'b [u8],
    at: usize,
}

impl<'b> Reader<'b> {
    fn take(&mut self, n: usize) -> Option<&'b [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn u64_var(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f).checked_shl(shift)?;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    /// A length of bytes still to read (never more than are left).
    fn len(&mut self) -> Option<usize> {
        let n = usize::try_from(self.u64_var()?).ok()?;
        (n <= self.b.len() - self.at).then_some(n)
    }

    /// A count of items still to read, each at least one byte long (so an allocation for them
    /// is never larger than the index).
    fn count(&mut self) -> Option<usize> {
        self.len()
    }
}

/// Appends `v` as LEB128.
fn put_var(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Words as ids in a vocabulary, and one text's list of `(word, count)` in order of first
/// occurrence.
#[derive(Default)]
struct Vocab {
    ids: std::collections::HashMap<String, u32, foldhash::fast::FixedState>,
    words: Vec<String>,
}

impl Vocab {
    fn id(&mut self, w: &str) -> u32 {
        if let Some(&i) = self.ids.get(w) {
            return i;
        }
        let i = u32::try_from(self.words.len()).unwrap_or(u32::MAX);
        self.ids.insert(w.to_owned(), i);
        self.words.push(w.to_owned());
        i
    }
}

fn add(list: &mut Vec<(u32, u32)>, seen: &mut std::collections::HashMap<u32, usize>, id: u32) {
    match seen.get(&id) {
        Some(&k) => list[k].1 += 1,
        None => {
            seen.insert(id, list.len());
            list.push((id, 1));
        }
    }
}

/// Builds the search index of the document `text` of `tier` (named `path`, as the store names
/// it): `None` when it cannot be read as a memory file (a spawn skips it then) or the tier is
/// not ranked (hot).
pub(crate) fn build(tier: Tier, path: &str, text: &str) -> Option<Vec<u8>> {
    if tier == Tier::Hot {
        return None;
    }
    let src = Source::parse(path, text).ok()?;
    let units = ranked_units(tier, &src, &mut Vec::new());
    let mut vocab = Vocab::default();
    let mut body: Vec<u8> = Vec::new();
    let mut buf = String::new();
    let mut lowered = String::new();
    put_var(&mut body, units.len() as u64);
    for u in &units {
        let (texts, n) = u.search_texts();
        put_var(&mut body, n as u64);
        for &(t, times) in &texts[..n] {
            let mut lists: [Vec<(u32, u32)>; 3] = Default::default();
            let mut seen: [std::collections::HashMap<u32, usize>; 3] = Default::default();
            each_compound(t, &mut buf, |w| {
                add(&mut lists[0], &mut seen[0], vocab.id(w))
            });
            lowered.clear();
            lowered.push_str(t);
            lowered.make_ascii_lowercase();
            each_ascii_word(&lowered, |w| add(&mut lists[1], &mut seen[1], vocab.id(w)));
            each_other_word(&lowered, &mut buf, |_, w| {
                add(&mut lists[2], &mut seen[2], vocab.id(w));
            });
            put_var(&mut body, t.len() as u64);
            put_var(&mut body, u64::from(times));
            for l in &lists {
                put_var(&mut body, l.len() as u64);
            }
            for l in &lists {
                for &(w, c) in l {
                    put_var(&mut body, u64::from(w));
                    put_var(&mut body, u64::from(c));
                }
            }
        }
    }
    let mut out = Vec::with_capacity(body.len() + vocab.words.len() * 8 + 64);
    out.extend_from_slice(MAGIC);
    out.push(FORMAT);
    let version = env!("CARGO_PKG_VERSION").as_bytes();
    put_var(&mut out, version.len() as u64);
    out.extend_from_slice(version);
    out.extend_from_slice(&(text.len() as u64).to_le_bytes());
    out.extend_from_slice(&hash(text.as_bytes()).to_le_bytes());
    put_var(&mut out, vocab.words.len() as u64);
    for w in &vocab.words {
        put_var(&mut out, w.len() as u64);
        out.extend_from_slice(w.as_bytes());
    }
    out.extend_from_slice(&body);
    let sum = hash(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    Some(out)
}

/// Builds the search index a store keeps for the document `text` of `tier` (`None` for hot,
/// and for a text that cannot be read as a memory file): what [`crate::FsStore`] writes next
/// to each cold, archive and wiki document, and what an implementor of
/// [`MemoryStore::read_index`](crate::MemoryStore::read_index) returns.
///
/// ```
/// use squad_memory::{Tier, build_index};
///
/// let index = build_index(Tier::Cold, "cold/data.md", "### 2026-03-14: Deploy\nStaging times out.\n");
/// assert!(index.is_some());
/// assert!(build_index(Tier::Hot, "hot/data.md", "Current task: x\n").is_none());
/// ```
pub fn build_index(tier: Tier, path: &str, text: &str) -> Option<Vec<u8>> {
    build(tier, path, text)
}

/// Whether `index` is a usable search index of `text` (the version, the text and the checksum
/// all match): what `squad memory validate` reports as a stale index when it is not.
///
/// ```
/// use squad_memory::{Tier, build_index, index_matches};
///
/// let text = "### 2026-03-14: Deploy\nStaging times out.\n";
/// let index = build_index(Tier::Cold, "cold/data.md", text).unwrap_or_default();
/// assert!(index_matches(&index, text));
/// assert!(!index_matches(&index, "### 2026-03-14: Deploy\nStaging is fine.\n"));
/// ```
pub fn index_matches(index: &[u8], text: &str) -> bool {
    SearchIndex::decode(index, text).is_some()
}
