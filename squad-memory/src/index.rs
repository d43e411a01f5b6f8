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
//! title, chunk) with its length and how many times its words count. Its vocabulary holds every
//! word the scorer may meet in them, lowercased, stop words left out, with the lists it is in
//! (compound words: camelCase parts and joined identifiers; ASCII words; words holding other
//! characters) and its occurrences: per text and list, its position in that list (lists in
//! order of first occurrence) and its count. Scoring a query then stems only the words whose
//! first characters match the query's (and the non-ASCII ones), and counts only their
//! occurrences, without reading the text ([`crate::bm25`]).
//!
//! The format (all integers LEB128 unless said): the magic `SQMIDX`, the format version (one
//! byte, 2), the crate version (length, bytes), the text's length and hash (8 bytes each, little
//! endian), the units (count; per unit its number of texts), the texts (count; per text its
//! length and weight), the vocabulary (count; per word its length, its UTF-8 bytes and a byte of
//! list bits), then per word its occurrences (their length in bytes; per occurrence the text as
//! a delta from the previous one times 3 plus the list, the position, the count), and the hash
//! of everything before it (8 bytes, little endian).

use std::collections::HashMap;
use std::hash::BuildHasher;

use crate::bm25::{each_ascii_word, each_compound, each_other_word};
use crate::render::{Source, ranked_units};
use crate::store::Tier;

/// The magic bytes an index starts with.
const MAGIC: &[u8; 6] = b"SQMIDX";
/// The format version; any change to the layout or to what is indexed bumps it.
const FORMAT: u8 = 2;
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
}

/// One word of the vocabulary: where its text and its occurrences are in the index's bytes,
/// and which of the three lists it is in (bit `k` for list `k`: compound, ASCII, other).
#[derive(Debug, Clone, Copy)]
struct WordRec {
    word: (u32, u32),
    occurrences: (u32, u32),
    lists: u8,
}

/// One occurrence of a word: in text `text` (of this document), list `list`, at position `pos`
/// of that list (in first-occurrence order), `count` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Occurrence {
    pub(crate) text: u32,
    pub(crate) list: u8,
    pub(crate) pos: u32,
    pub(crate) count: u32,
}

/// A decoded, validated search index of one document (see the module documentation). The
/// occurrences are decoded on demand, only for the words a query asks for.
#[derive(Debug, Clone, Default)]
pub(crate) struct SearchIndex {
    bytes: Vec<u8>,
    words: Vec<WordRec>,
    /// Where each unit's texts start in `texts` (one more than the units).
    units: Vec<u32>,
    pub(crate) texts: Vec<TextRec>,
}

impl SearchIndex {
    /// The number of words in the vocabulary.
    pub(crate) fn words(&self) -> usize {
        self.words.len()
    }

    /// Word `i` of the vocabulary, and the lists it is in (empty and none when out of range).
    pub(crate) fn word(&self, i: usize) -> (&str, u8) {
        let Some(w) = self.words.get(i) else {
            return ("", 0);
        };
        let text = self
            .bytes
            .get(w.word.0 as usize..w.word.1 as usize)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or_default();
        (text, w.lists)
    }

    /// Calls `f` with each occurrence of word `i`, in text order; `false` when they cannot be
    /// read (a corrupt index: the caller falls back to the texts).
    pub(crate) fn occurrences(&self, i: usize, mut f: impl FnMut(Occurrence)) -> bool {
        let Some(w) = self.words.get(i) else {
            return false;
        };
        let Some(b) = self
            .bytes
            .get(w.occurrences.0 as usize..w.occurrences.1 as usize)
        else {
            return false;
        };
        let mut r = Reader { b, at: 0 };
        let mut text = 0u64;
        while r.at < b.len() {
            let (Some(v), Some(pos), Some(count)) = (r.u64_var(), r.u64_var(), r.u64_var()) else {
                return false;
            };
            let Some(next) = text.checked_add(v / 3) else {
                return false;
            };
            text = next;
            let (Ok(t), Ok(pos), Ok(count)) = (
                u32::try_from(text),
                u32::try_from(pos),
                u32::try_from(count),
            ) else {
                return false;
            };
            if t as usize >= self.texts.len() || count == 0 {
                return false;
            }
            f(Occurrence {
                text: t,
                list: (v % 3) as u8,
                pos,
                count,
            });
        }
        true
    }

    /// The number of units.
    pub(crate) fn units(&self) -> usize {
        self.units.len().saturating_sub(1)
    }

    /// The texts of unit `u`, and the index of the first of them.
    pub(crate) fn unit_texts(&self, u: usize) -> (&[TextRec], usize) {
        let (Some(&s), Some(&e)) = (self.units.get(u), self.units.get(u + 1)) else {
            return (&[], 0);
        };
        (
            self.texts.get(s as usize..e as usize).unwrap_or_default(),
            s as usize,
        )
    }

    /// Decodes `bytes` as the index of `text`: `None` when it is not one (another text,
    /// another crate or format version, truncated, corrupt). Never panics, whatever the bytes.
    pub(crate) fn decode(bytes: Vec<u8>, text: &str) -> Option<Self> {
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
        let unit_count = r.count()?;
        let mut units = Vec::with_capacity(unit_count + 1);
        units.push(0u32);
        let mut total = 0u32;
        for _ in 0..unit_count {
            total = total.checked_add(u32::try_from(r.u64_var()?).ok()?)?;
            units.push(total);
        }
        let text_count = r.count()?;
        if text_count != total as usize {
            return None;
        }
        let mut texts = Vec::with_capacity(text_count);
        for _ in 0..text_count {
            let len = r.u64_var()?;
            let times = u32::try_from(r.u64_var()?).ok()?;
            texts.push(TextRec { len, times });
        }
        let word_count = r.count()?;
        let mut words = Vec::with_capacity(word_count);
        for _ in 0..word_count {
            let n = r.len()?;
            let start = r.at;
            std::str::from_utf8(r.take(n)?).ok()?;
            let lists = r.byte()?;
            if lists == 0 || lists > 7 {
                return None;
            }
            let word = (u32::try_from(start).ok()?, u32::try_from(start + n).ok()?);
            words.push(WordRec {
                word,
                occurrences: (0, 0),
                lists,
            });
        }
        for w in &mut words {
            let n = r.len()?;
            let start = r.at;
            r.take(n)?;
            w.occurrences = (u32::try_from(start).ok()?, u32::try_from(start + n).ok()?);
        }
        if r.at != body.len() {
            return None;
        }
        Some(Self {
            bytes,
            words,
            units,
            texts,
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
        let b = *self.b.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn u64_var(&mut self) -> Option<u64> {
        let b = self.byte()?;
        if b < 0x80 {
            return Some(u64::from(b));
        }
        let mut v = u64::from(b & 0x7f);
        for shift in (7..64).step_by(7) {
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

/// The vocabulary being built: each word's id, text, lists and occurrences (encoded).
#[derive(Default)]
struct Vocab {
    ids: HashMap<String, usize, foldhash::fast::FixedState>,
    words: Vec<(String, u8, Vec<u8>, u64)>,
}

impl Vocab {
    fn id(&mut self, w: &str) -> usize {
        if let Some(&i) = self.ids.get(w) {
            return i;
        }
        let i = self.words.len();
        self.ids.insert(w.to_owned(), i);
        self.words.push((w.to_owned(), 0, Vec::new(), 0));
        i
    }

    /// Records `(id, count)` at `pos` of list `list` of text `text`.
    fn occurs(&mut self, id: usize, count: u32, text: u64, list: u8, pos: usize) {
        if let Some((_, lists, occ, last)) = self.words.get_mut(id) {
            *lists |= 1 << list;
            put_var(occ, (text - *last) * 3 + u64::from(list));
            put_var(occ, pos as u64);
            put_var(occ, u64::from(count));
            *last = text;
        }
    }
}

/// Adds an occurrence of `id` to a list in first-occurrence order.
fn add(list: &mut Vec<(usize, u32)>, seen: &mut HashMap<usize, usize>, id: usize) {
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
    let mut out = Vec::with_capacity(text.len() / 2 + 64);
    out.extend_from_slice(MAGIC);
    out.push(FORMAT);
    let version = env!("CARGO_PKG_VERSION").as_bytes();
    put_var(&mut out, version.len() as u64);
    out.extend_from_slice(version);
    out.extend_from_slice(&(text.len() as u64).to_le_bytes());
    out.extend_from_slice(&hash(text.as_bytes()).to_le_bytes());
    put_var(&mut out, units.len() as u64);
    let mut texts = Vec::new();
    for u in &units {
        let (t, n) = u.search_texts();
        put_var(&mut out, n as u64);
        texts.extend_from_slice(&t[..n]);
    }
    put_var(&mut out, texts.len() as u64);
    let mut buf = String::new();
    let mut lowered = String::new();
    for (ti, &(t, times)) in texts.iter().enumerate() {
        put_var(&mut out, t.len() as u64);
        put_var(&mut out, u64::from(times));
        let mut lists: [Vec<(usize, u32)>; 3] = Default::default();
        let mut seen: [HashMap<usize, usize>; 3] = Default::default();
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
        for (k, l) in lists.iter().enumerate() {
            for (pos, &(id, count)) in l.iter().enumerate() {
                vocab.occurs(id, count, ti as u64, k as u8, pos);
            }
        }
    }
    put_var(&mut out, vocab.words.len() as u64);
    for (w, lists, _, _) in &vocab.words {
        put_var(&mut out, w.len() as u64);
        out.extend_from_slice(w.as_bytes());
        out.push(*lists);
    }
    for (_, _, occ, _) in &vocab.words {
        put_var(&mut out, occ.len() as u64);
        out.extend_from_slice(occ);
    }
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
    SearchIndex::decode(index.to_vec(), text).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::{SpawnInputs, render};
    use crate::{Budget, LoadPlan, Situation};

    const TEXT: &str = "### 2026-03-14: Staging deploy\nThe staging deploy times out; \
                        BlobStorageClient retries.\n\n## Notes\nCafé — naïve timeout fix.\n";

    /// `bytes` with its checksum made right again (a crafted index, not a corrupt one).
    fn sealed(mut bytes: Vec<u8>) -> Vec<u8> {
        let n = bytes.len() - 8;
        bytes.truncate(n);
        let sum = hash(&bytes);
        bytes.extend_from_slice(&sum.to_le_bytes());
        bytes
    }

    fn prompt(index: Option<Vec<u8>>) -> String {
        let cold =
            Source::with_index("cold/data.md", TEXT, index).unwrap_or_else(|e| panic!("{e}"));
        let inputs = SpawnInputs {
            agent: "data".parse().unwrap_or_else(|e| panic!("{e}")),
            hot: None,
            cold: Some(cold),
            archive: None,
            wiki: Vec::new(),
            skipped: Vec::new(),
        };
        let plan = LoadPlan::new(Situation::Debugging).task("why does the staging deploy time out");
        format!("{:?}", render(&plan, &inputs, &Budget::default()))
    }

    #[test]
    fn crafted_indexes_are_refused_or_fall_back() {
        let good = build(Tier::Cold, "cold/data.md", TEXT).unwrap_or_default();
        assert!(SearchIndex::decode(good.clone(), TEXT).is_some());
        let expected = prompt(None);
        assert_eq!(prompt(Some(good.clone())), expected);
        let header = MAGIC.len() + 1 + 1 + env!("CARGO_PKG_VERSION").len() + 16;
        let body_end = good.len() - 8;
        let mut crafted: Vec<(&str, Vec<u8>)> = Vec::new();
        // Every byte of the body set to each of a few values, the checksum made right: any
        // varint, count, length, UTF-8 or occurrence may be wrong.
        for at in header..body_end {
            for v in [0x00, 0x7f, 0x80, 0xff] {
                let mut b = good.clone();
                b[at] = v;
                crafted.push(("byte set", sealed(b)));
            }
        }
        // Cut anywhere, sealed.
        for cut in header..body_end {
            let mut b = good[..cut].to_vec();
            b.extend_from_slice(&[0; 8]);
            crafted.push(("cut", sealed(b)));
        }
        // A huge count right after the header.
        let mut b = good[..header].to_vec();
        b.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        b.extend_from_slice(&[0; 8]);
        crafted.push(("huge count", sealed(b)));
        let mut used = 0;
        for (what, bytes) in crafted {
            if let Some(idx) = SearchIndex::decode(bytes.clone(), TEXT) {
                used += 1;
                // Whatever it decodes to, reading it never panics.
                for w in 0..idx.words() {
                    let _ = idx.word(w);
                    let _ = idx.occurrences(w, |_| {});
                }
                let _ = prompt(Some(bytes));
            } else {
                assert_eq!(prompt(Some(bytes)), expected, "{what}");
            }
        }
        // Some crafted indexes decode (a count changed is still a well-formed index); those
        // were read without a panic above.
        assert!(used > 0);
    }

    #[test]
    fn an_occurrence_past_the_texts_falls_back() {
        let idx = SearchIndex::decode(
            build(Tier::Cold, "cold/data.md", TEXT).unwrap_or_default(),
            TEXT,
        )
        .unwrap_or_default();
        assert!(idx.words() > 0);
        // Every occurrence stays within the texts.
        for w in 0..idx.words() {
            assert!(idx.occurrences(w, |o| assert!((o.text as usize) < idx.texts.len())));
        }
        assert!(!idx.occurrences(idx.words(), |_| {}));
        // Text deltas that add up past `u64::MAX`: refused, no overflow.
        let mut bytes = Vec::new();
        for _ in 0..3 {
            put_var(&mut bytes, u64::MAX);
            put_var(&mut bytes, 0);
            put_var(&mut bytes, 1);
        }
        let crafted = SearchIndex {
            words: vec![WordRec {
                word: (0, 0),
                occurrences: (0, u32::try_from(bytes.len()).unwrap_or(0)),
                lists: 1,
            }],
            bytes,
            units: vec![0, 1],
            texts: vec![TextRec { len: 1, times: 1 }],
        };
        assert!(!crafted.occurrences(0, |_| {}));
    }
}
