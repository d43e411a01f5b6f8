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
//! Format 3 also lays out the document's sections ([`Layout`]): for each entry a spawn may
//! offer, its id, heading, line, date and byte range in the text; for each unit, its entry and
//! part (or, for free text, its line, item, title, date, part and prompt text); and what is left
//! out before scoring (superseded and repeated entries). A spawn then builds its sections from
//! the index, reads the text through once in chunks only to check its length and hash, and
//! parses only the entries it needs, each from its own range. The writer records a layout only
//! when every entry's range, parsed alone, gives the entry the whole document's parse gives;
//! otherwise a reader parses the whole text.
//!
//! Format 4 also names the document's stamp ([`DocStamp`]: for a file, its device, inode,
//! length and modification and change times) when the store vouches for it: the writer reads
//! the file through after the file system's clock has moved past its last change, so any
//! later write changes the stamp. A spawn that finds the same stamp on the document it opens
//! skips reading the whole text to hash it; any other stamp, or none, and it hashes the text.
//! And it splits the index in two: a front, which every query reads whole and which ends with
//! its own hash, and the occurrence lists after it, each read only when a query asks for its
//! word and checked against its own checksum (a corrupt list found then makes the scorer read
//! the texts instead). Four fifths of an index are its lists, and a task asks for a few words.
//!
//! The format (all integers LEB128 unless said): the magic `SQMIDX`, the format version (one
//! byte, 4), the front's length (8 bytes, little endian), the crate version (length, bytes),
//! the text's length and [`text_hash`] (8 bytes each, little endian), the stamp (a byte 0 for
//! none, or 1 and its five parts, 8 bytes each, little endian), the units (count; per unit its
//! number of texts), the texts (count; per text its length and weight), the vocabulary (count;
//! per word its length, its UTF-8 bytes, a byte of list bits, the length in bytes of its
//! occurrence list and the list's checksum, 4 bytes, little endian), the layout (a byte 0 for
//! none, or 1 and the layout, see `put_layout`), and the hash of the front before it (8 bytes,
//! little endian): the end of the front. Then the occurrence lists, in vocabulary order, filling
//! the rest of the index exactly: per occurrence the text as a delta from the previous one
//! times 3 plus the list, the position, the count.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, OnceLock};

use squad_model::Timestamp;

use crate::bm25::{each_ascii_word, each_compound, each_other_word};
use crate::entry::{Entry, Item, MemoryDoc};
use crate::name::MemoryId;
use crate::render::{
    EntryRef, LeftList, LeftOut, LeftOutDetail, Reason, Source, Text, Unit, ranked_units,
};
use crate::store::{DocReader, DocStamp, Tier, WholeBytes};

/// The magic bytes an index starts with.
const MAGIC: &[u8; 6] = b"SQMIDX";
/// The format version; any change to the layout or to what is indexed bumps it (an index of
/// another version is stale: ignored, and rebuilt by `squad memory index`).
const FORMAT: u8 = 4;
/// The largest index a reader accepts, in bytes (a larger file is ignored, not read).
pub(crate) const MAX_INDEX_BYTES: u64 = 4 * crate::store::MAX_FILE_BYTES;

/// The 64-bit hash an index names its text and itself by (foldhash, fixed seed: not
/// cryptographic; a text edited by hand that collides is a 2^-64 accident).
pub(crate) fn hash(bytes: &[u8]) -> u64 {
    foldhash::fast::FixedState::with_seed(0x5351_4d49_4458_0001).hash_one(bytes)
}

/// The size of the chunks a text is hashed in ([`text_hash`]).
const TEXT_CHUNK: usize = 64 * 1024;

/// The hash an index names its text by: its chunks of [`TEXT_CHUNK`] bytes fed in turn to one
/// hasher (foldhash, fixed seed), so a reader can hash a file chunk by chunk, holding one
/// chunk at a time ([`scan`]).
pub(crate) fn text_hash(bytes: &[u8]) -> u64 {
    let mut h = text_hasher();
    for c in bytes.chunks(TEXT_CHUNK) {
        h.write(c);
    }
    h.finish()
}

fn text_hasher() -> impl Hasher {
    foldhash::fast::FixedState::with_seed(0x5351_4d49_4458_0003).build_hasher()
}

/// Reads the document of `reader` through once, a chunk at a time: its length and
/// [`text_hash`]; `None` when it cannot be read, or holds a NUL byte (it cannot be parsed:
/// the reader that reads it whole reports it).
pub(crate) fn scan(reader: &dyn DocReader) -> Option<(usize, u64)> {
    let len = reader.len();
    let mut buf = vec![0u8; usize::try_from(len).ok()?.min(TEXT_CHUNK)];
    let mut h = text_hasher();
    let mut at = 0u64;
    while at < len {
        let n = usize::try_from((len - at).min(TEXT_CHUNK as u64)).ok()?;
        let chunk = buf.get_mut(..n)?;
        reader.read_at(at, chunk).ok()?;
        if memchr::memchr(0, chunk).is_some() {
            return None;
        }
        h.write(chunk);
        at += n as u64;
    }
    Some((usize::try_from(len).ok()?, h.finish()))
}

/// What an index says of itself and of the text it was built from, read from its header
/// alone (not yet checked against its own hash): the front's length, the text's length and
/// [`text_hash`], and the document's stamp when the writer recorded one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) front_len: u64,
    pub(crate) text_len: usize,
    pub(crate) text_hash: u64,
    pub(crate) stamp: Option<DocStamp>,
}

/// The [`Head`] of the index `bytes`, if they start as an index of this format and crate
/// version does.
pub(crate) fn head(bytes: &[u8]) -> Option<Head> {
    Reader { b: bytes, at: 0 }.head()
}

/// One text of a unit as the scorer reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TextRec {
    /// Its length in bytes.
    pub(crate) len: u64,
    /// How many times its words count.
    pub(crate) times: u32,
}

/// One word of the vocabulary: where its text is in the index's front, where its occurrences
/// are in the lists that follow the front (offset, length) and their checksum, and which of
/// the three lists it is in (bit `k` for list `k`: compound, ASCII, other).
#[derive(Debug, Clone, Copy)]
struct WordRec {
    word: (u32, u32),
    occurrences: (u64, u32),
    sum: u32,
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
#[derive(Debug, Clone)]
pub(crate) struct SearchIndex {
    /// The front: everything but the occurrence lists.
    bytes: Vec<u8>,
    /// The occurrence lists, read a word at a time, from this offset of the reader on.
    lists: (Arc<dyn DocReader>, u64),
    words: Vec<WordRec>,
    /// Where each unit's texts start in `texts` (one more than the units).
    units: Vec<u32>,
    pub(crate) texts: Vec<TextRec>,
    /// Where the document's sections are (format 3), when the writer recorded it.
    pub(crate) layout: Option<Layout>,
    /// The length and [`text_hash`] of the text it was built from.
    text: (usize, u64),
}

/// Where a document's sections are and what a spawn reports of them, so that a spawn builds
/// its sections from the index and parses only the entries it needs (each from its own byte
/// range of the text) instead of the whole document. Recorded only when parsing each entry's
/// range alone gives the entry the whole document's parse gives ([`build`] checks it).
#[derive(Debug, Clone, Default)]
pub(crate) struct Layout {
    /// The entries the units come from, in file order.
    pub(crate) entries: Vec<LaidEntry>,
    /// What `ranked_units` leaves out (superseded and repeated entries), in order.
    pub(crate) dropped: Vec<Dropped>,
    /// The units, in `ranked_units` order.
    pub(crate) units: Vec<LaidUnit>,
    /// The document's text (set by the reader, once the index is known to match it).
    pub(crate) text: LaidText,
    /// Every name the layout holds (ids, headings, items, titles, chunks' texts), one after
    /// the other: a [`Span`] is a range of it.
    names: String,
}

/// Where a name is in a [`Layout`]'s names (a range checked to fall on character
/// boundaries): read with [`Layout::name`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Span(u32, u32);

/// Where a laid-out document's sections are read from.
#[derive(Debug, Clone, Default)]
pub(crate) enum LaidText {
    /// Nowhere yet (a layout just decoded).
    #[default]
    None,
    /// The whole text, in memory.
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "the unit tests lay out texts in memory")
    )]
    Text(String),
    /// The document, open (its sections read when they are needed).
    Reader(Arc<dyn DocReader>),
}

/// An entry of a [`Layout`]: what its units report, and where its text is.
#[derive(Debug, Clone)]
pub(crate) struct LaidEntry {
    /// Its id (checked as one when the entry is parsed).
    pub(crate) id: Span,
    pub(crate) heading: Span,
    pub(crate) line: usize,
    /// The Unix milliseconds of its date, `i64::MIN` when it has none: what selection sorts by.
    pub(crate) date: i64,
    /// Its byte range in the text: its heading line to where the next item starts.
    range: (usize, usize),
    /// The entry, parsed from its range when first needed (boxed: most never are, and an
    /// entry is large).
    parsed: OnceLock<Box<Entry>>,
}

/// A section `ranked_units` leaves out, as the manifest lists it.
#[derive(Debug, Clone)]
pub(crate) struct Dropped {
    pub(crate) item: Span,
    pub(crate) title: Span,
    pub(crate) bytes: usize,
    pub(crate) reason: Reason,
}

/// A unit of a [`Layout`].
#[derive(Debug, Clone)]
pub(crate) enum LaidUnit {
    /// An entry whole, or part `i` of `n` of it.
    Entry {
        entry: usize,
        piece: Option<(usize, usize)>,
        bytes: usize,
    },
    /// A chunk of free text (or a part of one), with its prompt text (boxed: entries are the
    /// common case, and small).
    Chunk(Box<LaidChunk>),
}

/// A chunk of free text of a [`Layout`], as `ranked_units` cuts it.
#[derive(Debug, Clone)]
pub(crate) struct LaidChunk {
    pub(crate) line: usize,
    pub(crate) item: Span,
    pub(crate) title: Span,
    /// As [`LaidEntry::date`].
    pub(crate) date: i64,
    pub(crate) piece: Option<(usize, usize)>,
    pub(crate) text: Span,
}

impl Layout {
    /// The name at `span` (empty for a span of another layout: the decoder checked its own).
    pub(crate) fn name(&self, span: Span) -> &str {
        self.names
            .get(span.0 as usize..span.1 as usize)
            .unwrap_or_default()
    }

    /// The text of `start..end`, if it can be read and is UTF-8.
    fn range(&self, (start, end): (usize, usize)) -> Option<Cow<'_, str>> {
        match &self.text {
            LaidText::None => None,
            LaidText::Text(t) => t.get(start..end).map(Cow::Borrowed),
            LaidText::Reader(r) => {
                let mut buf = vec![0u8; end.checked_sub(start)?];
                r.read_at(start as u64, &mut buf).ok()?;
                String::from_utf8(buf).ok().map(Cow::Owned)
            }
        }
    }

    /// The entry `e`, parsed from its range of the text the first time it is asked for.
    pub(crate) fn entry<'a>(&'a self, e: &'a LaidEntry) -> &'a Entry {
        e.parsed.get_or_init(|| {
            let parsed = self
                .range(e.range)
                .and_then(|t| MemoryDoc::parse("", &t).ok())
                .and_then(|d| d.items.into_iter().next())
                .and_then(|i| match i {
                    Item::Entry(x) => Some(x),
                    Item::Line(_) => None,
                });
            // The writer checked that the range parses to the entry; only a crafted index
            // gets here without one, and gets its heading.
            let mut x =
                parsed.unwrap_or_else(|| Entry::from_heading(self.name(e.heading).to_owned()));
            if let Ok(id) = MemoryId::new(self.name(e.id)) {
                x.id = id;
            }
            x.line = e.line;
            Box::new(x)
        })
    }
}

impl SearchIndex {
    /// Whether `text` is the text the index was built from (its length and hash).
    pub(crate) fn names(&self, text: &str) -> bool {
        self.text == (text.len(), text_hash(text.as_bytes()))
    }

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
        let mut b = vec![0u8; w.occurrences.1 as usize];
        let (reader, base) = &self.lists;
        if reader.read_at(base + w.occurrences.0, &mut b).is_err() || list_sum(&b) != w.sum {
            return false;
        }
        let mut r = Reader { b: &b, at: 0 };
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
    /// The occurrence lists are checked when a query reads them ([`SearchIndex::sound`]
    /// checks them all).
    pub(crate) fn decode(bytes: Vec<u8>, text: &str) -> Option<Self> {
        Self::decode_for(bytes, text.len(), text_hash(text.as_bytes()))
    }

    /// [`SearchIndex::decode`] for the text of `text_len` bytes whose [`text_hash`] is
    /// `text_hash`.
    pub(crate) fn decode_for(mut bytes: Vec<u8>, text_len: usize, text_hash: u64) -> Option<Self> {
        let front = front_len(&bytes)?;
        if front > bytes.len() {
            return None;
        }
        let lists = bytes.split_off(front);
        Self::decode_front(bytes, (Arc::new(WholeBytes(lists)), 0), text_len, text_hash)
    }

    /// Reads the index `ix` as the index of the text of `text_len` bytes whose [`text_hash`]
    /// is `text_hash`: its front now, each occurrence list when a query asks for it.
    pub(crate) fn read(ix: Arc<dyn DocReader>, text_len: usize, text_hash: u64) -> Option<Self> {
        let front = read_front(ix.as_ref())?;
        let base = front.len() as u64;
        Self::decode_front(front, (ix, base), text_len, text_hash)
    }

    /// Decodes the front `bytes` (see [`read_front`]), whose occurrence lists `lists` holds.
    pub(crate) fn decode_front(
        bytes: Vec<u8>,
        lists: (Arc<dyn DocReader>, u64),
        text_len: usize,
        text_hash: u64,
    ) -> Option<Self> {
        let body_len = bytes.len().checked_sub(8)?;
        let (body, sum) = bytes.split_at(body_len);
        if u64::from_le_bytes(sum.try_into().ok()?) != hash(body) {
            return None;
        }
        let mut r = Reader { b: body, at: 0 };
        let head = r.head()?;
        if head.front_len != bytes.len() as u64
            || head.text_len != text_len
            || head.text_hash != text_hash
        {
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
        let mut at = 0u64;
        for _ in 0..word_count {
            let n = r.len()?;
            let start = r.at;
            // Checked as UTF-8 when it is read (`word`): a query reads a few of them.
            r.take(n)?;
            let lists = r.byte()?;
            if lists == 0 || lists > 7 {
                return None;
            }
            let word = (u32::try_from(start).ok()?, u32::try_from(start + n).ok()?);
            let len = u32::try_from(r.u64_var()?).ok()?;
            let sum = u32::from_le_bytes(r.take(4)?.try_into().ok()?);
            words.push(WordRec {
                word,
                occurrences: (at, len),
                sum,
                lists,
            });
            at = at.checked_add(u64::from(len))?;
        }
        // The lists fill the rest of the index exactly.
        if lists.1.checked_add(at)? != lists.0.len() {
            return None;
        }
        let layout = match r.byte()? {
            0 => None,
            1 => Some(decode_layout(&mut r, text_len, unit_count)?),
            _ => return None,
        };
        if r.at != body.len() {
            return None;
        }
        Some(Self {
            bytes,
            lists,
            words,
            units,
            texts,
            layout,
            text: (text_len, text_hash),
        })
    }

    /// Whether every occurrence list can be read and decoded, and matches its checksum.
    pub(crate) fn sound(&self) -> bool {
        (0..self.words.len()).all(|i| self.occurrences(i, |_| {}))
    }
}

/// The length of the front of an index whose first bytes are `start` (the magic, the format
/// and the front's length), if they say.
fn front_len(start: &[u8]) -> Option<usize> {
    usize::try_from(Reader { b: start, at: 0 }.front_len()?).ok()
}

/// Reads the front of the index `ix` (everything but the occurrence lists, which follow it),
/// not yet checked: `None` when it does not start as an index of this format, or is cut short.
pub(crate) fn read_front(ix: &dyn DocReader) -> Option<Vec<u8>> {
    let mut start = [0u8; MAGIC.len() + 1 + 8];
    ix.read_at(0, &mut start).ok()?;
    let len = front_len(&start)?;
    if len < start.len() || len as u64 > ix.len() {
        return None;
    }
    let mut front = vec![0u8; len];
    front[..start.len()].copy_from_slice(&start);
    ix.read_at(start.len() as u64, &mut front[start.len()..])
        .ok()?;
    Some(front)
}

/// The checksum of an occurrence list.
fn list_sum(list: &[u8]) -> u32 {
    hash(list) as u32
}

/// Reads a [`Layout`] of `units` units of a text of `text_len` bytes (see [`put_layout`]).
fn decode_layout(r: &mut Reader<'_>, text_len: usize, units: usize) -> Option<Layout> {
    // The names, checked as UTF-8 once; each span then only on its character boundaries.
    let names = r.str()?;
    let name = |r: &mut Reader<'_>| {
        let start = r.usize()?;
        let end = start.checked_add(r.usize()?)?;
        names.get(start..end)?;
        Some(Span(u32::try_from(start).ok()?, u32::try_from(end).ok()?))
    };
    let entry_count = r.count()?;
    let mut entries = Vec::with_capacity(entry_count);
    for _ in 0..entry_count {
        let id = name(r)?;
        let heading = name(r)?;
        let line = r.usize()?;
        let start = r.usize()?;
        let end = r.usize()?;
        if start > end || end > text_len {
            return None;
        }
        let date = r.date()?;
        entries.push(LaidEntry {
            id,
            heading,
            line,
            date,
            range: (start, end),
            parsed: OnceLock::new(),
        });
    }
    let dropped_count = r.count()?;
    let mut dropped = Vec::with_capacity(dropped_count);
    for _ in 0..dropped_count {
        let item = name(r)?;
        let title = name(r)?;
        let bytes = r.usize()?;
        let reason = match r.byte()? {
            0 => Reason::Superseded,
            1 => Reason::Duplicate,
            _ => return None,
        };
        dropped.push(Dropped {
            item,
            title,
            bytes,
            reason,
        });
    }
    if r.count()? != units {
        return None;
    }
    let mut laid = Vec::with_capacity(units);
    for _ in 0..units {
        laid.push(match r.byte()? {
            0 => {
                let entry = r.usize()?;
                if entry >= entries.len() {
                    return None;
                }
                let piece = r.piece()?;
                let bytes = r.usize()?;
                LaidUnit::Entry {
                    entry,
                    piece,
                    bytes,
                }
            }
            1 => {
                let line = r.usize()?;
                let item = name(r)?;
                let title = name(r)?;
                let date = r.date()?;
                let piece = r.piece()?;
                let text = name(r)?;
                LaidUnit::Chunk(Box::new(LaidChunk {
                    line,
                    item,
                    title,
                    date,
                    piece,
                    text,
                }))
            }
            _ => return None,
        });
    }
    Some(Layout {
        entries,
        dropped,
        units: laid,
        text: LaidText::None,
        names: names.to_owned(),
    })
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

    /// The magic, the format and the front's length: the first bytes of an index.
    fn front_len(&mut self) -> Option<u64> {
        if self.take(MAGIC.len())? != MAGIC || self.byte()? != FORMAT {
            return None;
        }
        self.u64()
    }

    /// An index's header ([`Head`]), the crate version checked.
    fn head(&mut self) -> Option<Head> {
        let front_len = self.front_len()?;
        let version_len = self.len()?;
        if self.take(version_len)? != env!("CARGO_PKG_VERSION").as_bytes() {
            return None;
        }
        Some(Head {
            front_len,
            text_len: usize::try_from(self.u64()?).ok()?,
            text_hash: self.u64()?,
            stamp: self.stamp()?,
        })
    }

    /// A byte 0 for no stamp, or 1 and its five parts; `None` for anything else.
    fn stamp(&mut self) -> Option<Option<DocStamp>> {
        match self.byte()? {
            0 => Some(None),
            1 => {
                let mut parts = [0u64; 5];
                for p in &mut parts {
                    *p = self.u64()?;
                }
                Some(Some(DocStamp::from_parts(parts)))
            }
            _ => None,
        }
    }

    /// A LEB128 integer: one byte inline (most of an index's integers are small), more in
    /// [`Reader::u64_var_long`].
    #[inline]
    fn u64_var(&mut self) -> Option<u64> {
        let b = self.byte()?;
        if b < 0x80 {
            return Some(u64::from(b));
        }
        self.u64_var_long(b)
    }

    /// The rest of a LEB128 integer whose first byte is `b`.
    #[inline(never)]
    fn u64_var_long(&mut self, b: u8) -> Option<u64> {
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

    fn usize(&mut self) -> Option<usize> {
        usize::try_from(self.u64_var()?).ok()
    }

    /// A string: its length, then its UTF-8 bytes.
    fn str(&mut self) -> Option<&'b str> {
        let n = self.len()?;
        std::str::from_utf8(self.take(n)?).ok()
    }

    /// A date: 0, or 1 and its Unix milliseconds (8 bytes, little endian); `i64::MIN` for
    /// none.
    fn date(&mut self) -> Option<i64> {
        match self.byte()? {
            0 => Some(i64::MIN),
            1 => Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?)),
            _ => None,
        }
    }

    /// A part: 0 for none, else `i` (1-based) and `n`, `i <= n`.
    fn piece(&mut self) -> Option<Option<(usize, usize)>> {
        let i = self.usize()?;
        if i == 0 {
            return Some(None);
        }
        let n = self.usize()?;
        (i <= n).then_some(Some((i, n)))
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

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_var(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// Appends `s` to a layout's `names` and its place there (start, length) to `out`.
fn put_name(out: &mut Vec<u8>, names: &mut String, s: &str) {
    put_var(out, names.len() as u64);
    put_var(out, s.len() as u64);
    names.push_str(s);
}

fn put_date(out: &mut Vec<u8>, d: Option<Timestamp>) {
    match d {
        None => out.push(0),
        Some(d) => {
            out.push(1);
            out.extend_from_slice(&d.unix_millis().to_le_bytes());
        }
    }
}

fn put_piece(out: &mut Vec<u8>, piece: Option<(usize, usize)>) {
    match piece {
        None => put_var(out, 0),
        Some((i, n)) => {
            put_var(out, i as u64);
            put_var(out, n as u64);
        }
    }
}

/// Appends the layout of `units` (cut from `doc`, the parse of `text`) and the `dropped`
/// sections: a byte 1, the names (length, UTF-8 bytes: every id, heading, item, title and
/// chunk text below, one after the other, each named by its start and length in them), the
/// entries (count; per entry its id, heading, line, byte range and date), the dropped sections
/// (count; per section its item, title, bytes and reason), the units (count; per unit 0, its
/// entry, part and bytes, or 1, its line, item, title, date, part and text). Appends a byte 0
/// instead when an entry's range, parsed alone, does not give the entry (a reader then parses
/// the whole text).
fn put_layout(
    out: &mut Vec<u8>,
    text: &str,
    doc: &MemoryDoc,
    units: &[Unit<'_>],
    dropped: &[LeftOut],
) {
    match layout_bytes(text, doc, units, dropped) {
        Some(b) => {
            out.push(1);
            out.extend_from_slice(&b);
        }
        None => out.push(0),
    }
}

/// The bytes of [`put_layout`] after its first, `None` when an entry cannot be laid out.
fn layout_bytes(
    text: &str,
    doc: &MemoryDoc,
    units: &[Unit<'_>],
    dropped: &[LeftOut],
) -> Option<Vec<u8>> {
    // Where each line starts (line `n` at `starts[n - 1]`), as the parser numbers them.
    let mut starts = vec![0usize];
    starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
    let line_start = |n: usize| n.checked_sub(1).and_then(|k| starts.get(k)).copied();
    // Each entry's range: from its heading line to the line of the next item.
    let mut ranges: HashMap<*const Entry, (usize, usize)> = HashMap::new();
    for (k, item) in doc.items.iter().enumerate() {
        if let Item::Entry(e) = item {
            let start = line_start(e.line)?;
            let end = match doc.items.get(k + 1) {
                Some(Item::Entry(x)) => line_start(x.line)?,
                Some(Item::Line(l)) => line_start(l.line)?,
                None => text.len(),
            };
            ranges.insert(std::ptr::from_ref(e), (start, end));
        }
    }
    let mut entries: Vec<&Entry> = Vec::new();
    let mut ordinal: HashMap<*const Entry, usize> = HashMap::new();
    let mut names = String::new();
    let mut unit_bytes = Vec::new();
    put_var(&mut unit_bytes, units.len() as u64);
    for u in units {
        match (u.entry, &u.text) {
            (Some(EntryRef::Parsed(e)), _) => {
                let next = entries.len();
                let k = *ordinal.entry(std::ptr::from_ref(e)).or_insert(next);
                if k == next {
                    entries.push(e);
                }
                unit_bytes.push(0);
                put_var(&mut unit_bytes, k as u64);
                put_piece(&mut unit_bytes, u.piece);
                put_var(&mut unit_bytes, u.bytes as u64);
            }
            (None, Text::Owned(t)) => {
                unit_bytes.push(1);
                put_var(&mut unit_bytes, u.line as u64);
                put_name(&mut unit_bytes, &mut names, &u.item);
                put_name(&mut unit_bytes, &mut names, &u.title);
                put_date(&mut unit_bytes, u.date);
                put_piece(&mut unit_bytes, u.piece);
                put_name(&mut unit_bytes, &mut names, t);
            }
            _ => return None,
        }
    }
    let mut out = Vec::new();
    put_var(&mut out, entries.len() as u64);
    for e in entries {
        let &(start, end) = ranges.get(&std::ptr::from_ref(e))?;
        // The entry parsed alone must be the entry (its id, line and group come from the
        // whole document).
        let mut alone = match MemoryDoc::parse("", text.get(start..end)?)
            .ok()?
            .items
            .as_slice()
        {
            [Item::Entry(x)] => x.clone(),
            _ => return None,
        };
        alone.id = e.id.clone();
        alone.line = e.line;
        alone.group.clone_from(&e.group);
        if alone != *e {
            return None;
        }
        put_name(&mut out, &mut names, e.id.as_str());
        put_name(&mut out, &mut names, &e.heading);
        put_var(&mut out, e.line as u64);
        put_var(&mut out, start as u64);
        put_var(&mut out, end as u64);
        put_date(&mut out, e.date);
    }
    put_var(&mut out, dropped.len() as u64);
    for d in dropped {
        put_name(&mut out, &mut names, &d.item);
        put_name(&mut out, &mut names, &d.title);
        put_var(&mut out, d.bytes as u64);
        out.push(match d.reason {
            Reason::Superseded => 0,
            Reason::Duplicate => 1,
            _ => return None,
        });
    }
    out.extend_from_slice(&unit_bytes);
    let mut laid = Vec::with_capacity(names.len() + out.len() + 8);
    put_str(&mut laid, &names);
    laid.extend_from_slice(&out);
    Some(laid)
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
    build_stamped(tier, path, text, None)
}

/// [`build`], naming the [`DocStamp`] of the document that holds `text`, when the store
/// vouches for one (a reader that finds the same stamp then skips hashing the text).
pub(crate) fn build_stamped(
    tier: Tier,
    path: &str,
    text: &str,
    stamp: Option<DocStamp>,
) -> Option<Vec<u8>> {
    if tier == Tier::Hot {
        return None;
    }
    let src = Source::parse(path, text).ok()?;
    let mut dropped = LeftList::new(LeftOutDetail::Full);
    let units = ranked_units(tier, &src, &mut dropped);
    let mut vocab = Vocab::default();
    let mut out = Vec::with_capacity(text.len() / 2 + 64);
    out.extend_from_slice(MAGIC);
    out.push(FORMAT);
    // The front's length, filled in once it is known.
    let front_at = out.len();
    out.extend_from_slice(&0u64.to_le_bytes());
    let version = env!("CARGO_PKG_VERSION").as_bytes();
    put_var(&mut out, version.len() as u64);
    out.extend_from_slice(version);
    out.extend_from_slice(&(text.len() as u64).to_le_bytes());
    out.extend_from_slice(&text_hash(text.as_bytes()).to_le_bytes());
    match stamp {
        None => out.push(0),
        Some(s) => {
            out.push(1);
            for p in s.parts() {
                out.extend_from_slice(&p.to_le_bytes());
            }
        }
    }
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
    for (w, lists, occ, _) in &vocab.words {
        put_var(&mut out, w.len() as u64);
        out.extend_from_slice(w.as_bytes());
        out.push(*lists);
        put_var(&mut out, occ.len() as u64);
        out.extend_from_slice(&list_sum(occ).to_le_bytes());
    }
    put_layout(&mut out, text, &src.doc, &units, &dropped);
    let front = out.len() as u64 + 8;
    out[front_at..front_at + 8].copy_from_slice(&front.to_le_bytes());
    let sum = hash(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    for (_, _, occ, _) in &vocab.words {
        out.extend_from_slice(occ);
    }
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
    SearchIndex::decode(index.to_vec(), text).is_some_and(|i| i.sound())
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
        // The checksum is the front's last 8 bytes, where the front's length says it ends.
        if let Some(n) = front_len(&bytes).filter(|&n| (8..=bytes.len()).contains(&n)) {
            let sum = hash(&bytes[..n - 8]);
            bytes[n - 8..n].copy_from_slice(&sum.to_le_bytes());
        }
        bytes
    }

    fn prompt(index: Option<Vec<u8>>) -> String {
        let cold =
            Source::with_index("cold/data.md", TEXT, index).unwrap_or_else(|e| panic!("{e}"));
        render_cold(cold, "why does the staging deploy time out")
    }

    /// The render of `text` as cold from the laid-out source `index` gives, if it gives one.
    fn laid_prompt(text: &str, index: Vec<u8>, task: &str) -> Option<String> {
        let idx = SearchIndex::decode(index, text)?;
        let cold = Source::laid_out(
            "cold/data.md".to_owned(),
            text.len(),
            LaidText::Text(text.to_owned()),
            Box::new(idx),
        )
        .ok()?;
        Some(render_cold(cold, task))
    }

    fn render_cold(cold: Source, task: &str) -> String {
        let inputs = SpawnInputs {
            agent: "data".parse().unwrap_or_else(|e| panic!("{e}")),
            hot: None,
            cold: Some(cold),
            archive: None,
            wiki: Vec::new(),
            skipped: Vec::new(),
        };
        let plan = LoadPlan::new(Situation::Debugging).task(task);
        format!("{:?}", render(&plan, &inputs, &Budget::default()))
    }

    /// A document with every kind of section: entries, a long one in parts, free-text chunks
    /// (one long), a superseded entry, a renamed repeated id, an exact duplicate, fences, a
    /// `##` group, a dated `##` entry, carriage returns.
    fn varied() -> String {
        let long = "The staging deploy times out while BlobStorageClient retries. ".repeat(8);
        let mut t = String::from(
            "# Notes
Some free text about the staging deploy.

",
        );
        t.push_str(&format!(
            "## Group
### 2026-03-14: Staging deploy
**id:** d-1
{long}

- {long}

```sh
### not a heading
```
#### Inside
{long}
---

"
        ));
        t.push_str(
            "### 2026-03-15: Old deploy note
**superseded_by:** d-1
The deploy timed out.

",
        );
        t.push_str(
            "### 2026-03-16: Again
**id:** d-1
Another entry with the same id: deploy.
",
        );
        t.push_str(
            "### Same
Same text, deploy.
### Same
Same text, deploy.
",
        );
        t.push_str(&format!(
            "## 2026-04-01 Deploy timeout
A dated group heading: timeout.

## Free
{long}

{long}

{long}
"
        ));
        t.push_str(
            "### 2026-05-01: Last
The deploy, at the end, with no line end",
        );
        t
    }

    #[test]
    fn a_layout_round_trips_and_renders_the_same() {
        let text = varied();
        let bytes = build(Tier::Cold, "cold/data.md", &text).unwrap_or_default();
        let idx = SearchIndex::decode(bytes.clone(), &text)
            .unwrap_or_else(|| panic!("the index of the varied text"));
        let layout = idx.layout.as_ref().unwrap_or_else(|| panic!("no layout"));
        let src = Source::parse("cold/data.md", &text).unwrap_or_else(|e| panic!("{e}"));
        let mut dropped = LeftList::new(LeftOutDetail::Full);
        let units = ranked_units(Tier::Cold, &src, &mut dropped);
        assert_eq!(layout.units.len(), units.len());
        assert_eq!(layout.dropped.len(), dropped.len());
        assert!(layout.units.iter().any(|u| matches!(u, LaidUnit::Chunk(_))));
        assert!(
            layout
                .units
                .iter()
                .any(|u| matches!(u, LaidUnit::Entry { piece: Some(_), .. }))
        );
        // Every entry parses alone to itself.
        let laid = Source::laid_out(
            "cold/data.md".to_owned(),
            text.len(),
            LaidText::Text(text.clone()),
            Box::new(idx),
        )
        .unwrap_or_else(|_| panic!("not laid out"));
        let layout = laid.layout().unwrap_or_else(|| panic!("no layout"));
        for e in &layout.entries {
            let parsed = layout.entry(e);
            let whole = src
                .doc
                .find(&parsed.id)
                .unwrap_or_else(|| panic!("{}", layout.name(e.id)));
            assert_eq!(
                (&parsed.heading, &parsed.body, parsed.date),
                (&whole.heading, &whole.body, whole.date)
            );
        }
        for task in [
            "why does the staging deploy time out",
            "BlobStorageClient",
            "free text",
            "naïve café",
        ] {
            let plain = render_cold(
                Source::parse("cold/data.md", &text).unwrap_or_else(|e| panic!("{e}")),
                task,
            );
            assert_eq!(
                laid_prompt(&text, bytes.clone(), task),
                Some(plain),
                "{task}"
            );
        }
    }

    #[test]
    fn an_index_of_an_older_format_is_stale() {
        let good = build(Tier::Cold, "cold/data.md", TEXT).unwrap_or_default();
        for old in [1u8, 2, 3, 5, 0xff] {
            let mut b = good.clone();
            b[MAGIC.len()] = old;
            let b = sealed(b);
            assert!(SearchIndex::decode(b.clone(), TEXT).is_none(), "{old}");
            assert!(!index_matches(&b, TEXT));
            assert_eq!(prompt(Some(b)), prompt(None));
        }
    }

    #[test]
    fn crafted_indexes_are_refused_or_fall_back() {
        let good = build(Tier::Cold, "cold/data.md", TEXT).unwrap_or_default();
        assert!(SearchIndex::decode(good.clone(), TEXT).is_some());
        let expected = prompt(None);
        assert_eq!(prompt(Some(good.clone())), expected);
        let header = MAGIC.len() + 1 + 8 + 1 + env!("CARGO_PKG_VERSION").len() + 16;
        let body_end = good.len();
        let mut crafted: Vec<(&str, Vec<u8>)> = Vec::new();
        // Every byte after the header (the front and the occurrence lists) set to each of a
        // few values, the front's checksum made right: any varint, count, length, UTF-8 or
        // occurrence may be wrong (a list's own checksum then refuses it when it is read).
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
        // The front's length wrong: zero, shorter than its start, cut, past the end, huge.
        let front = front_len(&good).unwrap_or_default() as u64;
        for n in [
            0,
            8,
            15,
            front - 1,
            front + 1,
            good.len() as u64 + 1,
            u64::MAX,
        ] {
            let mut b = good.clone();
            b[MAGIC.len() + 1..MAGIC.len() + 9].copy_from_slice(&n.to_le_bytes());
            crafted.push(("front length", sealed(b)));
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
                // Whatever it decodes to, reading it never panics, laid out or not.
                for w in 0..idx.words() {
                    let _ = idx.word(w);
                    let _ = idx.occurrences(w, |_| {});
                }
                let _ = prompt(Some(bytes.clone()));
                let _ = laid_prompt(TEXT, bytes, "why does the staging deploy time out");
            } else {
                assert_eq!(prompt(Some(bytes.clone())), expected, "{what}");
                assert_eq!(laid_prompt(TEXT, bytes, "x"), None, "{what}");
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
        .unwrap_or_else(|| panic!("the index of TEXT"));
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
                sum: list_sum(&bytes),
                lists: 1,
            }],
            lists: (Arc::new(WholeBytes(bytes)), 0),
            bytes: Vec::new(),
            units: vec![0, 1],
            texts: vec![TextRec { len: 1, times: 1 }],
            layout: None,
            text: (0, 0),
        };
        assert!(!crafted.occurrences(0, |_| {}));
    }
}
