//! Bulk reads of note blobs straight from the repository's pack files.
//!
//! Reading every note of a large namespace through the object database costs one index lookup
//! over every pack, one delta-base cache insertion (a copy) and a growing buffer per blob. Here
//! the blobs are located once, sorted by pack and offset, and decoded in that order with the
//! blobs decoded so far as delta bases: git writes the base of an `OFS_DELTA` before the delta,
//! and packed note blobs are mostly deltas of each other, so almost every blob costs one inflate
//! and one delta application. Blobs that are not in a pack of the repository itself (loose
//! objects, alternates) are read through the object database as before.

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;

use gix::odb::pack;
use gix::odb::pack::data::decode::entry::ResolvedBase;

use crate::error::{Error, ErrorKind, Result};

/// The packs of a repository's own object directory, each with its index.
pub(crate) struct Packs {
    bundles: Vec<pack::Bundle>,
}

/// Where a blob is: (bundle number, pack offset of its entry).
pub(crate) type Location = (usize, u64);

impl Packs {
    /// Opens every `objects/pack/*.idx` with its pack. A pack that cannot be opened is skipped:
    /// its objects are then read through the object database, which reports real problems.
    pub(crate) fn open(repo: &gix::Repository) -> Self {
        let dir = repo.common_dir().join("objects").join("pack");
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "idx"))
                    .collect()
            })
            .unwrap_or_default();
        paths.sort();
        let bundles = paths
            .iter()
            .filter_map(|p| pack::Bundle::at(p, repo.object_hash()).ok())
            .collect();
        Self { bundles }
    }

    /// The pack and offset of `id`, or `None` when no pack here holds it.
    pub(crate) fn locate(&self, id: &gix::oid) -> Option<Location> {
        self.bundles.iter().enumerate().find_map(|(n, b)| {
            b.index
                .lookup(id)
                .map(|i| (n, b.index.pack_offset_at_index(i)))
        })
    }
}

/// Decodes blobs of [`Packs`] in pack order into one growing buffer, using each decoded blob as
/// a possible delta base for the ones after it.
pub(crate) struct Decoder<'p> {
    packs: &'p Packs,
    repo: &'p gix::Repository,
    inflate: gix::zlib::Inflate,
    buf: Vec<u8>,
    /// (pack id, data offset) of every blob decoded so far -> where it is in `arena`.
    seen: HashMap<(u32, u64), Range<usize>>,
    arena: Vec<u8>,
}

impl<'p> Decoder<'p> {
    /// A decoder over `packs`, sized for about `blobs` blobs; `repo` resolves the rare base that
    /// is referred to by id and lives outside the pack.
    pub(crate) fn new(packs: &'p Packs, repo: &'p gix::Repository, blobs: usize) -> Self {
        Self {
            packs,
            repo,
            inflate: gix::zlib::Inflate::default(),
            buf: Vec::with_capacity(4096),
            seen: HashMap::with_capacity(blobs),
            arena: Vec::with_capacity(blobs.saturating_mul(256)),
        }
    }

    /// Decodes the blob `id` at `at`; its bytes are [`Decoder::bytes`] of the returned range.
    /// Blobs should come in ascending pack order for deltas to find their bases decoded already.
    pub(crate) fn decode(&mut self, id: &gix::oid, at: Location) -> Result<Range<usize>> {
        let corrupt = |e: Option<gix::Error>| {
            let err = Error::new(
                ErrorKind::Corrupt,
                "notes.read",
                format!("note blob {id} cannot be read"),
            );
            match e {
                Some(e) => err.with_source(e),
                None => err,
            }
        };
        let (n, offset) = at;
        let bundle = self.packs.bundles.get(n).ok_or_else(|| corrupt(None))?;
        let data = &bundle.pack;
        let entry = data.entry(offset).map_err(|e| corrupt(Some(e)))?;
        let key = (data.id, entry.data_offset);
        if let Some(range) = self.seen.get(&key) {
            // The same blob noted on several objects: decoded once.
            return Ok(range.clone());
        }
        let repo = self.repo;
        let index = &bundle.index;
        let resolve = |base: &gix::oid, out: &mut Vec<u8>| {
            if let Some(i) = index.lookup(base) {
                return data
                    .entry(index.pack_offset_at_index(i))
                    .map(|e| Some(ResolvedBase::InPack(e)));
            }
            // A base by id outside this pack (not written by git for local packs; handled anyway).
            Ok(repo.find_object(base).ok().map(|object| {
                out.clear();
                out.extend_from_slice(&object.data);
                ResolvedBase::OutOfPack {
                    kind: object.kind,
                    end: out.len(),
                }
            }))
        };
        let mut bases = Bases {
            seen: &self.seen,
            arena: &self.arena,
        };
        let outcome = data
            .decode_entry(
                entry,
                &mut self.buf,
                &mut self.inflate,
                &resolve,
                &mut bases,
            )
            .map_err(|e| corrupt(Some(e)))?;
        if outcome.kind != gix::object::Kind::Blob {
            return Err(Error::new(
                ErrorKind::Corrupt,
                "notes.read",
                format!("note entry {id} is a {}, not a blob", outcome.kind),
            ));
        }
        let start = self.arena.len();
        self.arena.extend_from_slice(&self.buf);
        let range = start..self.arena.len();
        self.seen.insert(key, range.clone());
        Ok(range)
    }

    /// The bytes of a blob decoded by [`Decoder::decode`].
    pub(crate) fn bytes(&self, range: Range<usize>) -> &[u8] {
        self.arena.get(range).unwrap_or_default()
    }
}

/// The delta-base cache of a [`Decoder`]: the blobs it decoded, by pack position.
struct Bases<'a> {
    seen: &'a HashMap<(u32, u64), Range<usize>>,
    arena: &'a [u8],
}

impl pack::cache::DecodeEntry for Bases<'_> {
    fn put(&mut self, _: u32, _: u64, _: &[u8], _: gix::object::Kind, _: usize) {}

    fn get(
        &mut self,
        pack_id: u32,
        offset: u64,
        out: &mut Vec<u8>,
    ) -> Option<(gix::object::Kind, usize)> {
        let bytes = self.arena.get(self.seen.get(&(pack_id, offset))?.clone())?;
        out.clear();
        out.extend_from_slice(bytes);
        // The second value is the entry's packed size, which only the decoder's statistics use.
        Some((gix::object::Kind::Blob, 0))
    }
}
