//! Bulk reads of many objects straight from the repository's pack files.
//!
//! Reading every note of a large namespace through the object database costs one lookup over
//! every pack index, one delta chain walk (or a cache lookup and copy) and a fresh buffer per
//! object. Here the objects are located once and planned as delta trees: each wanted entry's
//! chain of bases is read from the entry headers alone (no inflating), bases that are not wanted
//! themselves are added to the plan, and every tree is then decoded depth first from its
//! undeltified root, each child from the bytes of its parent. So every entry of the plan is
//! inflated once (but the few at which a large tree is cut, see below), a delta is applied once,
//! and a thread holds only the bytes of the current chain (one buffer per depth, reused),
//! whatever the pack's delta layout. Threads take pieces: a whole delta tree, or, for a tree
//! larger than a thread's share, a run of one node's children, the piece reading that node's
//! chain again. So no thread needs bytes another one decoded, and a pack whose blobs are nearly
//! all deltas of one base (as after a full repack) still uses every thread.
//!
//! The plan holds every base its wanted entries need: for a few wanted entries spread over a
//! large pack (a window of a large namespace), most of the pack. [`decode_sweep`] reads them
//! in pack order without a plan instead, each thread keeping only the chain it read last, in
//! memory that does not grow with the pack; a chain prefix that several calls need is decoded
//! by each of them.
//!
//! Objects that are not in a pack of the repository itself (loose objects, alternates) are read
//! by the caller through the object database. A delta whose base is outside its pack (git does
//! not write such local packs, but they are valid) is resolved through the object database.

use std::cell::OnceCell;
use std::path::PathBuf;

use gix::odb::pack;
use gix::odb::pack::data::decode::entry::ResolvedBase;
use gix::odb::pack::data::entry::Header;

use crate::error::{Error, ErrorKind, Result};
use crate::parallel;

/// The packs of a repository's own object directory, each with its index.
pub(crate) struct Packs {
    bundles: Vec<pack::Bundle>,
}

/// Where an object is: (bundle number, pack offset of its entry).
pub(crate) type Location = (usize, u64);

/// The pack offset of `id` in `bundle`, when its pack holds it.
fn offset_in(bundle: &pack::Bundle, id: &gix::oid) -> Option<u64> {
    let index = &bundle.index;
    index.lookup(id).map(|i| index.pack_offset_at_index(i))
}

/// The delta base `base` as an entry of `bundle`'s own pack, if it is one (git's local packs
/// refer to bases by id only within the pack).
fn base_in(
    bundle: &pack::Bundle,
    base: &gix::oid,
) -> Option<std::result::Result<ResolvedBase, gix::Error>> {
    offset_in(bundle, base).map(|o| bundle.pack.entry(o).map(ResolvedBase::InPack))
}

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

    /// Decodes `id` into `out` straight from its pack (no object cache, no copy), resolving its
    /// delta chain from the pack itself; `Ok(None)` when no pack here holds it, or when a base
    /// is outside the pack (the caller then asks the object database).
    pub(crate) fn read_into(
        &self,
        id: &gix::oid,
        out: &mut Vec<u8>,
        inflate: &mut gix::zlib::Inflate,
    ) -> Result<Option<gix::object::Kind>> {
        let Some((n, offset)) = self.locate(id) else {
            return Ok(None);
        };
        let bundle = &self.bundles[n];
        let data = &bundle.pack;
        let entry = data.entry(offset).map_err(corrupt_at(bundle, offset))?;
        let outside = std::cell::Cell::new(false);
        let resolve = |base: &gix::oid, _: &mut Vec<u8>| match base_in(bundle, base) {
            Some(entry) => entry.map(Some),
            None => {
                outside.set(true);
                Ok(None)
            }
        };
        match data.decode_entry(entry, out, inflate, &resolve, &mut pack::cache::Never) {
            Ok(outcome) => Ok(Some(outcome.kind)),
            Err(_) if outside.get() => Ok(None),
            Err(e) => Err(corrupt_at(bundle, offset)(e)),
        }
    }

    /// [`Packs::locate`] for the ids of many `items` at once (`id` gives each one's), in their
    /// order. When they are a large share of
    /// the packs' objects, one pass over each index with a hash table of the ids is cheaper
    /// than a binary search per id (whose probes mostly miss the cache); otherwise each id is
    /// looked up. Either way an id is found in the first pack that holds it.
    pub(crate) fn locate_all<T: Sync>(
        &self,
        items: &[T],
        id: impl Fn(&T) -> &gix::ObjectId + Sync,
    ) -> Result<Vec<Option<Location>>> {
        let objects: usize = self
            .bundles
            .iter()
            .map(|b| b.index.num_objects() as usize)
            .sum();
        if items.len().saturating_mul(SCAN_SHARE) < objects {
            return parallel::map_chunks(items, parallel::PARALLEL_MIN, "notes.read", |part| {
                Ok(part.iter().map(|item| self.locate(id(item))).collect())
            });
        }
        // id -> its first index in `items`; later indices of the same id are linked by `next`.
        let mut first: gix::hashtable::HashMap<gix::ObjectId, u32> =
            gix::hashtable::HashMap::default();
        first.reserve(items.len());
        let mut next = vec![NONE; items.len()];
        for (i, item) in items.iter().enumerate().rev() {
            let i32 = u32::try_from(i).unwrap_or(NONE);
            if let Some(head) = first.insert(*id(item), i32) {
                next[i] = head;
            }
        }
        let mut out = vec![None; items.len()];
        for (n, bundle) in self.bundles.iter().enumerate() {
            let index = &bundle.index;
            let positions: Vec<u32> = (0..index.num_objects()).collect();
            let hits =
                parallel::map_chunks(&positions, parallel::PARALLEL_MIN, "notes.read", |part| {
                    Ok(part
                        .iter()
                        .filter_map(|&p| first.get(index.oid_at_index(p)).map(|&i| (i, p)))
                        .collect())
                })?;
            for (mut i, p) in hits {
                let at = (n, index.pack_offset_at_index(p));
                while i != NONE && out[i as usize].is_none() {
                    out[i as usize] = Some(at);
                    i = next[i as usize];
                }
            }
        }
        Ok(out)
    }

    /// [`Packs::locate_all`] for items whose ids ascend (equal ids allowed), as a walk of a
    /// notes tree gives its objects: each index is merged with them, in order, on several
    /// threads, without a hash table of the ids. Ids out of order are located by
    /// [`Packs::locate_all`].
    pub(crate) fn locate_sorted<T: Sync>(
        &self,
        items: &[T],
        id: impl Fn(&T) -> &gix::ObjectId + Sync,
    ) -> Result<Vec<Option<Location>>> {
        if !items.is_sorted_by(|a, b| id(a) <= id(b)) {
            return self.locate_all(items, id);
        }
        let mut out = vec![None; items.len()];
        for (n, bundle) in self.bundles.iter().enumerate() {
            let index = &bundle.index;
            let count = index.num_objects();
            let found =
                parallel::map_chunks(items, parallel::PARALLEL_MIN, "notes.read", |part| {
                    let Some(first) = part.first() else {
                        return Ok(Vec::new());
                    };
                    // The first index position not below the part's first id, then a merge.
                    let (mut lo, mut hi) = (0, count);
                    while lo < hi {
                        let mid = lo + (hi - lo) / 2;
                        if index.oid_at_index(mid) < id(first).as_ref() {
                            lo = mid + 1;
                        } else {
                            hi = mid;
                        }
                    }
                    let mut at = lo;
                    let mut found = Vec::with_capacity(part.len());
                    for item in part {
                        let want = id(item).as_ref();
                        while at < count && index.oid_at_index(at) < want {
                            at += 1;
                        }
                        found.push(
                            (at < count && index.oid_at_index(at) == want)
                                .then(|| (n, index.pack_offset_at_index(at))),
                        );
                    }
                    Ok(found)
                })?;
            for (slot, at) in out.iter_mut().zip(found) {
                if slot.is_none() {
                    *slot = at;
                }
            }
        }
        Ok(out)
    }

    /// The kind of the object at `at`, from the entry headers alone (a delta's is its base's):
    /// `Ok(None)` when the chain leaves the pack (the caller then asks the object database).
    pub(crate) fn kind_at(&self, at: Location) -> Result<Option<gix::object::Kind>> {
        let (n, mut offset) = at;
        let bundle = self
            .bundles
            .get(n)
            .ok_or_else(|| Error::new(ErrorKind::Backend, "notes.list", "a pack vanished"))?;
        // A chain longer than git ever writes (4095) means a cycle in a corrupt pack.
        for _ in 0..=4096 {
            let entry = bundle
                .pack
                .entry(offset)
                .map_err(corrupt_at(bundle, offset))?;
            offset = match &entry.header {
                Header::Commit => return Ok(Some(gix::object::Kind::Commit)),
                Header::Tree => return Ok(Some(gix::object::Kind::Tree)),
                Header::Blob => return Ok(Some(gix::object::Kind::Blob)),
                Header::Tag => return Ok(Some(gix::object::Kind::Tag)),
                Header::OfsDelta { base_distance } => {
                    match entry.checked_base_pack_offset(*base_distance) {
                        Some(base) => base,
                        None => return Ok(None),
                    }
                }
                Header::RefDelta { base_id } => match offset_in(bundle, base_id) {
                    Some(base) => base,
                    None => return Ok(None),
                },
            };
        }
        Ok(None)
    }

    /// The pack and offset of `id`, or `None` when no pack here holds it.
    pub(crate) fn locate(&self, id: &gix::oid) -> Option<Location> {
        self.bundles
            .iter()
            .enumerate()
            .find_map(|(n, b)| offset_in(b, id).map(|o| (n, o)))
    }
}

/// Reads objects one at a time straight from the packs, keeping the objects of delta chains it
/// decoded in a cache bounded in bytes (as git's delta base cache does): reading many objects
/// in an order unrelated to the pack's (one fanout directory after the other, say) decodes each
/// chain element about once while the cache holds it, with memory that does not grow with the
/// number of objects read.
pub(crate) struct ChainReader<'p> {
    packs: &'p Packs,
    cache: pack::cache::lru::MemoryCappedHashmap,
    inflate: gix::zlib::Inflate,
    chain: Vec<u64>,
}

impl<'p> ChainReader<'p> {
    /// A reader over `packs` whose cache holds at most `cache_bytes` of object data.
    pub(crate) fn new(packs: &'p Packs, cache_bytes: usize) -> Self {
        Self {
            packs,
            cache: pack::cache::lru::MemoryCappedHashmap::new(cache_bytes.max(1)),
            inflate: gix::zlib::Inflate::default(),
            chain: Vec::new(),
        }
    }

    /// Decodes `id` into `out`; `Ok(None)` when no pack here holds it or a delta base is
    /// outside its pack (the caller then asks the object database).
    pub(crate) fn read(
        &mut self,
        id: &gix::oid,
        out: &mut Vec<u8>,
    ) -> Result<Option<gix::object::Kind>> {
        use pack::cache::DecodeEntry;
        let Some((n, offset)) = self.packs.locate(id) else {
            return Ok(None);
        };
        let bundle = &self.packs.bundles[n];
        let data = &bundle.pack;
        // The chain from `id` down to a cached entry or an undeltified one (offsets of entries).
        self.chain.clear();
        let mut at = offset;
        let mut cached_kind = None;
        // A chain longer than git ever writes (4095) means a cycle in a corrupt pack.
        for _ in 0..=4096 {
            let entry = data.entry(at).map_err(corrupt_at(bundle, at))?;
            if let Some((kind, _)) = self.cache.get(data.id, entry.data_offset, out) {
                cached_kind = Some(kind);
                break;
            }
            self.chain.push(at);
            match header(self.packs, n, at)? {
                Base::InPack(base) => at = base,
                Base::External => return Ok(None),
                Base::None => break,
            }
        }
        let mut kind = cached_kind;
        // Decode from the deepest element up: each one's base is in the cache by then.
        while let Some(at) = self.chain.pop() {
            let entry = data.entry(at).map_err(corrupt_at(bundle, at))?;
            let data_offset = entry.data_offset;
            let root = kind.is_none();
            let resolve = |base: &gix::oid, _: &mut Vec<u8>| match base_in(bundle, base) {
                Some(entry) => entry.map(Some),
                None => Ok(None),
            };
            let outcome = data
                .decode_entry(entry, out, &mut self.inflate, &resolve, &mut self.cache)
                .map_err(corrupt_at(bundle, at))?;
            kind = Some(outcome.kind);
            if root {
                // gix caches what it resolves through a delta, not an undeltified entry.
                self.cache.put(data.id, data_offset, out, outcome.kind, 0);
            }
        }
        Ok(kind)
    }
}

/// [`Packs::locate_all`] scans the indexes when the ids are at least one in this many of the
/// packs' objects.
const SCAN_SHARE: usize = 8;

/// No base: an undeltified entry (a root of a delta tree).
const ROOT: u32 = u32::MAX;
/// The base is outside the entry's pack (a `REF_DELTA` to another object): a root decoded with
/// the object database's help.
const EXTERNAL: u32 = u32::MAX - 1;
/// The end of a list of wanted indices.
const NONE: u32 = u32::MAX;

/// Where the base of an entry is.
enum Base {
    /// An undeltified entry.
    None,
    /// At this offset of the entry's own pack.
    InPack(u64),
    /// Outside the entry's pack.
    External,
}

/// Where the base of the entry at `offset` of bundle `n` is, from its header.
fn header(packs: &Packs, n: usize, offset: u64) -> Result<Base> {
    let bundle = packs
        .bundles
        .get(n)
        .ok_or_else(|| Error::new(ErrorKind::Backend, "notes.read", "a pack vanished"))?;
    let entry = bundle
        .pack
        .entry(offset)
        .map_err(corrupt_at(bundle, offset))?;
    let base = match &entry.header {
        Header::OfsDelta { base_distance } => Base::InPack(
            entry
                .checked_base_pack_offset(*base_distance)
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::Corrupt,
                        "notes.read",
                        format!(
                            "pack entry at offset {offset} of {} points before the pack",
                            bundle.pack.path().display()
                        ),
                    )
                })?,
        ),
        Header::RefDelta { base_id } => {
            offset_in(bundle, base_id).map_or(Base::External, Base::InPack)
        }
        _ => Base::None,
    };
    Ok(base)
}

/// A piece of work for one thread: the entry `node` (its own delta chain read from the pack
/// when it is a delta), then, depth first, the subtrees of its children `kids` (positions in
/// its children list). A delta tree small enough is one piece; a larger one is cut at its
/// nodes into runs of children, each piece reading the node again, and only the first one
/// handing it over (`head`). So a pack whose blobs are nearly all deltas of one base still
/// spreads over threads, for one chain read per piece.
#[derive(Clone)]
struct Unit {
    node: u32,
    kids: std::ops::Range<u32>,
    size: u32,
    head: bool,
}

/// One pack entry of the plan (its header is read again when it is decoded: keeping the
/// parsed headers of a large plan cost more in memory traffic than parsing them twice).
struct Node {
    bundle: u32,
    offset: u64,
    /// Index of the base's node, [`ROOT`] or [`EXTERNAL`].
    base: u32,
    /// The first index of `wanted` that is this entry, or [`NONE`] for a base that is not
    /// wanted itself.
    first_want: u32,
}

/// What the caller asked for, for messages.
pub(crate) struct Wanted<'a> {
    /// Every wanted object: its id and location.
    pub(crate) objects: &'a [(gix::ObjectId, Location)],
    /// The kind every wanted object must have.
    pub(crate) kind: gix::object::Kind,
    /// What a wanted object is, in messages ("note entry", "notes tree").
    pub(crate) what: &'static str,
}

/// Decodes every object of `wanted` and maps its bytes with `map(index in wanted, bytes)` on
/// the thread that decoded it. The results come in one vector per thread, in no particular
/// order, one per wanted index (the same location wanted twice is decoded once and mapped
/// twice); they are not gathered into one vector, which would copy them all once more.
///
/// # Errors
///
/// `Corrupt` when an entry cannot be read or decoded, has the wrong kind, or when the pack's
/// deltas form a cycle (every wanted index is checked to have been decoded).
pub(crate) fn decode_all<T: Send>(
    packs: &Packs,
    repo: &gix::ThreadSafeRepository,
    wanted: &Wanted<'_>,
    map: impl Fn(usize, &[u8]) -> T + Sync,
) -> Result<Vec<Vec<(usize, T)>>> {
    let plan = Plan::new(packs, wanted)?;
    let groups = plan.groups(parallel::threads());
    let results = parallel::map_chunks(&groups, 2, "notes.read", |mine| {
        let nodes: usize = mine
            .iter()
            .flat_map(|g| g.iter())
            .map(|u| u.size as usize)
            .sum();
        let mut out = Vec::with_capacity(nodes);
        for roots in mine {
            plan.decode_units(roots, repo, wanted, &map, &mut out)?;
        }
        Ok(vec![out])
    })?;
    if results.iter().map(Vec::len).sum::<usize>() != plan.wanted_count {
        return Err(Error::new(
            ErrorKind::Corrupt,
            "notes.read",
            "the deltas of a pack form a cycle",
        ));
    }
    Ok(results)
}

/// Decodes every object of `wanted` and maps it as [`decode_all`] does (same results, also in
/// one vector per thread), without planning the delta trees: the wanted entries are read in
/// pack order, each thread taking a contiguous run of them with a [`Sweep`], which keeps only
/// the decoded chain of the entry it read last. A plan holds every base its wanted entries
/// need, which for a few wanted entries spread over a large pack (a window of a large
/// namespace) is most of the pack's entries; here memory is the wanted entries' order and one
/// delta chain per thread, whatever the size of the pack. git writes a delta family depth
/// first from its base, so in pack order the chain of the next wanted entry mostly starts at
/// an entry of the chain read last, and each entry a run needs is decoded about once.
///
/// # Errors
///
/// As [`decode_all`].
pub(crate) fn decode_sweep<T: Send>(
    packs: &Packs,
    repo: &gix::ThreadSafeRepository,
    wanted: &Wanted<'_>,
    map: impl Fn(usize, &[u8]) -> T + Sync,
) -> Result<Vec<Vec<(usize, T)>>> {
    let objects = wanted.objects;
    let mut order: Vec<(Location, u32)> = (0..u32::try_from(objects.len()).unwrap_or(u32::MAX))
        .zip(objects)
        .map(|(w, o)| (o.1, w))
        .collect();
    order.sort_unstable();
    parallel::map_chunks(&order, parallel::PARALLEL_MIN, "notes.read", |run| {
        let mut sweep = Sweep::new(packs);
        let local: OnceCell<gix::Repository> = OnceCell::new();
        // The object of the last wanted entry read through the object database.
        let mut outside = Vec::new();
        let mut out = Vec::with_capacity(run.len());
        for &(at, w) in run {
            let i = w as usize;
            let id = objects[i].0;
            let (kind, bytes) = match sweep.read(at)? {
                Some(read) => read,
                None => {
                    let repo = local.get_or_init(|| repo.to_thread_local());
                    let object = repo.find_object(id).map_err(|e| {
                        Error::new(
                            ErrorKind::Corrupt,
                            "notes.read",
                            format!("{} {id} cannot be read", wanted.what),
                        )
                        .with_source(e)
                    })?;
                    outside.clear();
                    outside.extend_from_slice(&object.data);
                    (object.kind, outside.as_slice())
                }
            };
            if kind != wanted.kind {
                return Err(Error::new(
                    ErrorKind::Corrupt,
                    "notes.read",
                    format!("{} {id} is a {kind}, not a {}", wanted.what, wanted.kind),
                ));
            }
            out.push((i, map(i, bytes)));
        }
        Ok(vec![out])
    })
}

/// Reads pack entries, best in pack order, keeping the decoded delta chain of the last one
/// read (one buffer per depth, reused): an entry whose chain passes through an entry of that
/// chain is decoded from there, each element from its parent's bytes; any other from its
/// root. Memory is one chain, however many entries are read.
struct Sweep<'p> {
    packs: &'p Packs,
    inflate: gix::zlib::Inflate,
    /// The chain of the entry read last, from its root: each element's location, data offset
    /// and kind; its bytes are in `bufs` at the same depth.
    path: Vec<(Location, u64, gix::object::Kind)>,
    bufs: Vec<Vec<u8>>,
    /// The pack offsets of the entries still to decode, the entry read first.
    todo: Vec<u64>,
}

impl<'p> Sweep<'p> {
    fn new(packs: &'p Packs) -> Self {
        Self {
            packs,
            inflate: gix::zlib::Inflate::default(),
            path: Vec::new(),
            bufs: Vec::new(),
            todo: Vec::new(),
        }
    }

    /// The kind and bytes of the entry at `at`; `Ok(None)` when its chain leaves its pack (the
    /// caller then asks the object database).
    fn read(&mut self, at: Location) -> Result<Option<(gix::object::Kind, &[u8])>> {
        let (n, offset) = at;
        let bundle = self
            .packs
            .bundles
            .get(n)
            .ok_or_else(|| Error::new(ErrorKind::Backend, "notes.read", "a pack vanished"))?;
        // Walk the chain down to an element of the path or to its root.
        self.todo.clear();
        let mut cursor = offset;
        let keep = loop {
            if let Some(depth) = self.path.iter().rposition(|p| p.0 == (n, cursor)) {
                break depth + 1;
            }
            // A chain longer than git ever writes (4095) means a cycle in a corrupt pack.
            if self.todo.len() > 4096 {
                return Err(Error::new(
                    ErrorKind::Corrupt,
                    "notes.read",
                    "the deltas of a pack form a cycle",
                ));
            }
            self.todo.push(cursor);
            match header(self.packs, n, cursor)? {
                Base::InPack(base) => cursor = base,
                Base::External => return Ok(None),
                Base::None => break 0,
            }
        };
        self.path.truncate(keep);
        let data = &bundle.pack;
        let resolve = |base: &gix::oid, _: &mut Vec<u8>| match base_in(bundle, base) {
            Some(entry) => entry.map(Some),
            None => Ok(None),
        };
        while let Some(offset) = self.todo.pop() {
            let depth = self.path.len();
            if self.bufs.len() <= depth {
                self.bufs.push(Vec::new());
            }
            let (done, rest) = self.bufs.split_at_mut(depth);
            let parent = self
                .path
                .last()
                .zip(done.last())
                .map(|(p, bytes)| ((p.1, p.2), bytes.as_slice()));
            let mut base = Parent {
                pack_id: data.id,
                parent,
            };
            let entry = data.entry(offset).map_err(corrupt_at(bundle, offset))?;
            let data_offset = entry.data_offset;
            let outcome = data
                .decode_entry(entry, &mut rest[0], &mut self.inflate, &resolve, &mut base)
                .map_err(corrupt_at(bundle, offset))?;
            self.path.push(((n, offset), data_offset, outcome.kind));
        }
        let depth = self.path.len();
        Ok(self
            .path
            .last()
            .zip(self.bufs.get(depth.wrapping_sub(1)))
            .map(|(p, bytes)| (p.2, bytes.as_slice())))
    }
}

/// The delta trees of the wanted entries, sorted by pack position.
struct Plan<'p> {
    packs: &'p Packs,
    /// Sorted by (bundle, pack offset).
    nodes: Vec<Node>,
    /// The next wanted index at the same location, per wanted index.
    next_want: Vec<u32>,
    /// `children[child_start[i]..child_start[i + 1]]` are the deltas based on node `i`, in
    /// pack order.
    child_start: Vec<u32>,
    children: Vec<u32>,
    /// The pieces of work, in pack order.
    units: Vec<Unit>,
    wanted_count: usize,
}

fn corrupt_at(bundle: &pack::Bundle, offset: u64) -> impl Fn(gix::Error) -> Error + '_ {
    move |e| {
        Error::new(
            ErrorKind::Corrupt,
            "notes.read",
            format!(
                "pack entry at offset {offset} of {} cannot be read",
                bundle.pack.path().display()
            ),
        )
        .with_source(e)
    }
}

impl<'p> Plan<'p> {
    /// Reads the headers of the wanted entries and of all their bases.
    fn new(packs: &'p Packs, wanted: &Wanted<'_>) -> Result<Self> {
        let objects = wanted.objects;
        // The wanted indices in pack order; the same location wanted twice is one node, whose
        // wanted indices are linked through `next_want`.
        let mut order: Vec<(Location, u32)> = (0..u32::try_from(objects.len()).unwrap_or(u32::MAX))
            .zip(objects)
            .map(|(w, o)| (o.1, w))
            .collect();
        order.sort_unstable();
        let mut next_want = vec![NONE; objects.len()];
        let mut heads: Vec<(Location, u32)> = Vec::with_capacity(objects.len());
        let mut last = NONE;
        for &(at, w) in &order {
            if heads.last().is_some_and(|h| h.0 == at) {
                next_want[last as usize] = w;
            } else {
                heads.push((at, w));
            }
            last = w;
        }
        drop(order);
        let mut locations: Vec<Location> = heads.iter().map(|h| h.0).collect();
        // Each entry's base, from its header. Bases that are not wanted themselves are read in
        // further rounds, each reading only the headers it adds (in a notes pack the bases of
        // note blobs are mostly note blobs, so there is rarely a second round).
        let mut parsed: Vec<(Location, Base)> = Vec::with_capacity(locations.len());
        let mut todo = locations.clone();
        let mut rounds = 0;
        while !todo.is_empty() {
            rounds += 1;
            let headers =
                parallel::map_chunks(&todo, parallel::PARALLEL_MIN, "notes.read", |part| {
                    part.iter()
                        .map(|&(n, offset)| Ok(((n, offset), header(packs, n, offset)?)))
                        .collect()
                })?;
            let mut missing: Vec<Location> = Vec::new();
            for (i, (at, base)) in headers.iter().enumerate() {
                if let Base::InPack(b) = base {
                    let base_at = (at.0, *b);
                    // Most bases are the entry just before.
                    let known = (i > 0 && todo[i - 1] == base_at)
                        || locations.binary_search(&base_at).is_ok();
                    if !known {
                        missing.push(base_at);
                    }
                }
            }
            parsed.extend(headers);
            missing.sort_unstable();
            missing.dedup();
            locations.extend_from_slice(&missing);
            locations.sort_unstable();
            todo = missing;
        }
        if rounds > 1 {
            parsed.sort_unstable_by_key(|p| p.0);
        }
        let bases: Vec<u32> = parsed
            .iter()
            .enumerate()
            .map(|(i, (at, base))| match base {
                Base::InPack(b) => {
                    let base_at = (at.0, *b);
                    if i > 0 && locations[i - 1] == base_at {
                        (i - 1) as u32
                    } else {
                        locations
                            .binary_search(&base_at)
                            .ok()
                            .and_then(|j| u32::try_from(j).ok())
                            .unwrap_or(ROOT)
                    }
                }
                Base::External => EXTERNAL,
                Base::None => ROOT,
            })
            .collect();
        let mut heads = heads.into_iter().peekable();
        let nodes: Vec<Node> = bases
            .into_iter()
            .zip(&locations)
            .map(|(base, at)| {
                let first_want = heads.next_if(|h| h.0 == *at).map_or(NONE, |h| h.1);
                Node {
                    bundle: u32::try_from(at.0).unwrap_or(u32::MAX),
                    offset: at.1,
                    base,
                    first_want,
                }
            })
            .collect();
        // Children lists (counting sort by base; nodes are in pack order already).
        let mut child_start = vec![0u32; nodes.len() + 1];
        for node in &nodes {
            if node.base < EXTERNAL {
                child_start[node.base as usize + 1] += 1;
            }
        }
        for i in 0..nodes.len() {
            child_start[i + 1] += child_start[i];
        }
        let mut fill = child_start.clone();
        let mut children = vec![0u32; child_start[nodes.len()] as usize];
        let mut roots = Vec::new();
        for (i, node) in nodes.iter().enumerate() {
            let i = u32::try_from(i).unwrap_or(u32::MAX);
            if node.base < EXTERNAL {
                let slot = &mut fill[node.base as usize];
                children[*slot as usize] = i;
                *slot += 1;
            } else {
                roots.push(i);
            }
        }
        let mut plan = Self {
            packs,
            nodes,
            next_want,
            child_start,
            children,
            units: Vec::new(),
            wanted_count: wanted.objects.len(),
        };
        plan.units = plan.cut(&roots, parallel::threads());
        Ok(plan)
    }

    /// Cuts the delta trees below `roots` into pieces of at most about a quarter of one
    /// thread's share, in pack order.
    fn cut(&self, roots: &[u32], threads: usize) -> Vec<Unit> {
        // Subtree sizes: in a depth-first pre-order every base comes before its deltas, so
        // adding sizes up in reverse pre-order sums each subtree before its base needs it.
        let mut preorder = Vec::with_capacity(self.nodes.len());
        let mut stack: Vec<u32> = roots.to_vec();
        while let Some(i) = stack.pop() {
            preorder.push(i);
            stack.extend_from_slice(self.kids(i));
        }
        let mut size = vec![1u32; self.nodes.len()];
        for &i in preorder.iter().rev() {
            let base = self.nodes[i as usize].base;
            if base < EXTERNAL {
                size[base as usize] += size[i as usize];
            }
        }
        let piece = (preorder.len() / (threads.max(1) * 4)).max(parallel::PARALLEL_MIN);
        let piece = u32::try_from(piece).unwrap_or(u32::MAX);
        let mut units = Vec::new();
        stack.extend_from_slice(roots);
        while let Some(i) = stack.pop() {
            let kids = self.kids(i);
            let all = 0..u32::try_from(kids.len()).unwrap_or(u32::MAX);
            if size[i as usize] <= piece {
                units.push(Unit {
                    node: i,
                    kids: all,
                    size: size[i as usize],
                    head: true,
                });
                continue;
            }
            // Runs of small children; a child too large is cut on its own.
            let mut head = true;
            let (mut start, mut acc) = (0u32, 0u32);
            for (k, &child) in (0u32..).zip(kids) {
                let s = size[child as usize];
                if s > piece || (acc > 0 && acc + s > piece) {
                    if acc > 0 {
                        units.push(Unit {
                            node: i,
                            kids: start..k,
                            size: acc + 1,
                            head,
                        });
                        head = false;
                    }
                    (start, acc) = (k, 0);
                }
                if s > piece {
                    stack.push(child);
                    start = k + 1;
                } else {
                    acc += s;
                }
            }
            if acc > 0 || head {
                units.push(Unit {
                    node: i,
                    kids: start..all.end,
                    size: acc + 1,
                    head,
                });
            }
        }
        units.sort_unstable_by_key(|u| (u.node, u.kids.start));
        units
    }

    fn kids(&self, i: u32) -> &[u32] {
        let i = i as usize;
        let (start, end) = (
            self.child_start[i] as usize,
            self.child_start[i + 1] as usize,
        );
        self.children.get(start..end).unwrap_or_default()
    }

    /// The pieces cut into at most `threads` contiguous runs of about equal work.
    fn groups(&self, threads: usize) -> Vec<&[Unit]> {
        let total: usize = self.units.iter().map(|u| u.size as usize).sum();
        if threads < 2 || total < parallel::PARALLEL_MIN {
            return vec![&self.units[..]];
        }
        let share = total.div_ceil(threads);
        let mut groups = Vec::with_capacity(threads);
        let (mut start, mut acc) = (0, 0);
        for (i, u) in self.units.iter().enumerate() {
            acc += u.size as usize;
            if acc >= share && groups.len() + 1 < threads {
                groups.push(&self.units[start..=i]);
                (start, acc) = (i + 1, 0);
            }
        }
        groups.push(&self.units[start..]);
        groups
    }

    /// Decodes the pieces `units` depth first, mapping every wanted entry into `out`.
    fn decode_units<T>(
        &self,
        units: &[Unit],
        repo: &gix::ThreadSafeRepository,
        wanted: &Wanted<'_>,
        map: &impl Fn(usize, &[u8]) -> T,
        out: &mut Vec<(usize, T)>,
    ) -> Result<()> {
        let local: OnceCell<gix::Repository> = OnceCell::new();
        let mut inflate = gix::zlib::Inflate::default();
        // One buffer per depth: the bytes of the current chain, with each one's data offset
        // and kind.
        let mut bufs: Vec<Vec<u8>> = vec![Vec::new()];
        let mut kinds: Vec<(u64, gix::object::Kind)> = vec![(0, gix::object::Kind::Blob)];
        // (node, next child position, end of the children to visit)
        let mut stack: Vec<(u32, usize, usize)> = Vec::new();
        for unit in units {
            kinds[0] =
                self.decode_node(unit.node, None, &mut bufs[0], &mut inflate, repo, &local)?;
            if unit.head {
                self.emit(unit.node, kinds[0].1, &bufs[0], wanted, map, out)?;
            }
            stack.push((unit.node, unit.kids.start as usize, unit.kids.end as usize));
            while let Some(top) = stack.last_mut() {
                let (node, next, end) = *top;
                let Some(&child) = self.kids(node).get(next).filter(|_| next < end) else {
                    stack.pop();
                    continue;
                };
                top.1 += 1;
                let depth = stack.len();
                if bufs.len() <= depth {
                    bufs.push(Vec::new());
                    kinds.push((0, gix::object::Kind::Blob));
                }
                let (done, rest) = bufs.split_at_mut(depth);
                let parent = done.last().map(|b| (kinds[depth - 1], b.as_slice()));
                kinds[depth] =
                    self.decode_node(child, parent, &mut rest[0], &mut inflate, repo, &local)?;
                self.emit(child, kinds[depth].1, &rest[0], wanted, map, out)?;
                stack.push((child, 0, self.kids(child).len()));
            }
        }
        Ok(())
    }

    /// Maps `bytes` for every wanted index at `node`, checking the kind.
    fn emit<T>(
        &self,
        node: u32,
        kind: gix::object::Kind,
        bytes: &[u8],
        wanted: &Wanted<'_>,
        map: &impl Fn(usize, &[u8]) -> T,
        out: &mut Vec<(usize, T)>,
    ) -> Result<()> {
        let mut w = self.nodes[node as usize].first_want;
        while w != NONE {
            let i = w as usize;
            if kind != wanted.kind {
                let id = wanted
                    .objects
                    .get(i)
                    .map(|o| o.0.to_string())
                    .unwrap_or_default();
                return Err(Error::new(
                    ErrorKind::Corrupt,
                    "notes.read",
                    format!("{} {id} is a {kind}, not a {}", wanted.what, wanted.kind),
                ));
            }
            out.push((i, map(i, bytes)));
            w = self.next_want[i];
        }
        Ok(())
    }

    /// Decodes one entry into `out`: from the pack alone (a root), through the object database
    /// (an external base), or by applying its delta to `parent` (the base's data offset, kind
    /// and bytes).
    fn decode_node(
        &self,
        node: u32,
        parent: Option<((u64, gix::object::Kind), &[u8])>,
        out: &mut Vec<u8>,
        inflate: &mut gix::zlib::Inflate,
        repo: &gix::ThreadSafeRepository,
        local: &OnceCell<gix::Repository>,
    ) -> Result<(u64, gix::object::Kind)> {
        let node = &self.nodes[node as usize];
        let bundle = self
            .packs
            .bundles
            .get(node.bundle as usize)
            .ok_or_else(|| Error::new(ErrorKind::Backend, "notes.read", "a pack vanished"))?;
        let data = &bundle.pack;
        let resolve = |base: &gix::oid, out: &mut Vec<u8>| {
            if let Some(entry) = base_in(bundle, base) {
                return entry.map(Some);
            }
            let repo = local.get_or_init(|| repo.to_thread_local());
            Ok(repo.find_object(base).ok().map(|object| {
                out.clear();
                out.extend_from_slice(&object.data);
                ResolvedBase::OutOfPack {
                    kind: object.kind,
                    end: out.len(),
                }
            }))
        };
        let mut base = Parent {
            pack_id: data.id,
            parent,
        };
        let entry = data
            .entry(node.offset)
            .map_err(corrupt_at(bundle, node.offset))?;
        let data_offset = entry.data_offset;
        let outcome = data
            .decode_entry(entry, out, inflate, &resolve, &mut base)
            .map_err(corrupt_at(bundle, node.offset))?;
        Ok((data_offset, outcome.kind))
    }
}

/// The delta-base "cache" of one decode: the parent entry, decoded just before.
struct Parent<'a> {
    pack_id: u32,
    parent: Option<((u64, gix::object::Kind), &'a [u8])>,
}

impl pack::cache::DecodeEntry for Parent<'_> {
    fn put(&mut self, _: u32, _: u64, _: &[u8], _: gix::object::Kind, _: usize) {}

    fn get(
        &mut self,
        pack_id: u32,
        offset: u64,
        out: &mut Vec<u8>,
    ) -> Option<(gix::object::Kind, usize)> {
        let ((data_offset, kind), bytes) = self.parent?;
        if pack_id != self.pack_id || offset != data_offset {
            return None;
        }
        out.clear();
        out.extend_from_slice(bytes);
        // The second value is the entry's packed size, which only the decoder's statistics use.
        Some((kind, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `git -C dir args` with `input` on its stdin; it must succeed.
    fn git_in(dir: &std::path::Path, args: &[&str], input: &[u8]) {
        use std::io::Write;
        let mut child = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        assert!(child.wait().unwrap().success(), "git {args:?}");
    }

    /// `locate_sorted` finds what `locate_all` finds, in the first pack that holds an id: over
    /// two packs sharing objects, with ids no pack holds (before, between and after the packs'
    /// ids), duplicates, parts small and large enough for threads, and ids out of order (which
    /// it hands to `locate_all`).
    #[test]
    fn locate_sorted_agrees_with_locate_all() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str], input: &[u8]| git_in(dir.path(), args, input);
        git(&["init", "-q"], b"");
        let blobs = |range: std::ops::Range<usize>| {
            let mut stream = String::new();
            for i in range {
                let body = format!("blob number {i}\n");
                stream.push_str(&format!("blob\ndata {}\n{body}\n", body.len()));
            }
            stream
        };
        // Two packs, the second holding some of the first's blobs again.
        git(&["fast-import", "--quiet"], blobs(0..900).as_bytes());
        git(&["fast-import", "--quiet"], blobs(600..1500).as_bytes());
        let repo = gix::open(dir.path()).unwrap();
        let packs = Packs::open(&repo);
        assert_eq!(packs.bundles.len(), 2, "two packs");
        let mut ids: Vec<gix::ObjectId> = packs
            .bundles
            .iter()
            .flat_map(|b| (0..b.index.num_objects()).map(|i| b.index.oid_at_index(i).to_owned()))
            .collect();
        let absent: Vec<gix::ObjectId> = [
            "0000000000000000000000000000000000000000",
            "7fffffffffffffffffffffffffffffffffffffff",
            "8000000000000000000000000000000000000001",
            "ffffffffffffffffffffffffffffffffffffffff",
        ]
        .iter()
        .map(|hex| gix::ObjectId::from_hex(hex.as_bytes()).unwrap())
        .collect();
        ids.extend(&absent);
        // Duplicates: every seventh id twice.
        let again: Vec<_> = ids.iter().step_by(7).copied().collect();
        ids.extend(again);
        ids.sort();
        for part in [&ids[..3], &ids[..100], &ids[..]] {
            let sorted = packs.locate_sorted(part, |id| id).unwrap();
            assert_eq!(
                sorted,
                packs.locate_all(part, |id| id).unwrap(),
                "{} ids",
                part.len()
            );
            let missing = part.iter().filter(|id| absent.contains(id)).count();
            assert_eq!(sorted.iter().filter(|l| l.is_none()).count(), missing);
        }
        let mut shuffled = ids.clone();
        shuffled.reverse();
        shuffled.swap(0, 5);
        assert_eq!(
            packs.locate_sorted(&shuffled, |id| id).unwrap(),
            packs.locate_all(&shuffled, |id| id).unwrap(),
            "ids out of order"
        );
    }

    /// Blobs that git packs as one deep delta tree: the plan cuts it into pieces (a node read
    /// again by several pieces, handed over by one), and every blob still comes out exactly as
    /// the object database reads it, once; the sweep reads the same.
    #[test]
    fn a_delta_tree_larger_than_a_piece_is_cut_and_every_entry_decodes_once() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str], input: &[u8]| git_in(dir.path(), args, input);
        git(&["init", "-q"], b"");
        let common = "a long common prefix that every blob shares, so that git deltas them. ";
        let mut stream = String::new();
        for i in 1..=3000 {
            let body = format!("{}{i}\n", common.repeat(4));
            stream.push_str(&format!("blob\nmark :{i}\ndata {}\n{body}\n", body.len()));
        }
        // A commit holding them all keeps them through the repack.
        stream.push_str(
            "commit refs/heads/main\ncommitter T <t@test.invalid> 1700000000 +0000\ndata 0\n",
        );
        for i in 1..=3000 {
            stream.push_str(&format!("M 100644 :{i} f{i}\n"));
        }
        stream.push('\n');
        git(&["fast-import", "--quiet"], stream.as_bytes());
        git(&["repack", "-adfq", "--window=50", "--depth=4095"], b"");
        let repo = gix::open(dir.path()).unwrap();
        let packs = Packs::open(&repo);
        let index = &packs.bundles[0].index;
        let objects: Vec<(gix::ObjectId, Location)> = (0..index.num_objects())
            .map(|i| {
                (
                    index.oid_at_index(i).to_owned(),
                    (0, index.pack_offset_at_index(i)),
                )
            })
            .filter(|(id, _)| repo.find_object(*id).unwrap().kind == gix::object::Kind::Blob)
            .collect();
        assert_eq!(objects.len(), 3000);
        let wanted = Wanted {
            objects: &objects,
            kind: gix::object::Kind::Blob,
            what: "blob",
        };
        let plan = Plan::new(&packs, &wanted).unwrap();
        assert!(
            plan.units.iter().any(|u| !u.head),
            "a delta tree should have been cut: {} units",
            plan.units.len()
        );
        let heads = plan.units.iter().filter(|u| u.head).count();
        let distinct = {
            let mut nodes: Vec<u32> = plan.units.iter().map(|u| u.node).collect();
            nodes.dedup();
            nodes.len()
        };
        assert_eq!(heads, distinct, "one piece hands each cut node over");
        let ts = gix::ThreadSafeRepository::open(dir.path()).unwrap();
        let mut got: Vec<(usize, Vec<u8>)> =
            decode_all(&packs, &ts, &wanted, |_, bytes| bytes.to_vec())
                .unwrap()
                .into_iter()
                .flatten()
                .collect();
        got.sort_by_key(|(w, _)| *w);
        assert_eq!(got.len(), objects.len());
        // The sweep reads the same bytes, whatever the depth of the chains.
        let mut swept: Vec<(usize, Vec<u8>)> =
            decode_sweep(&packs, &ts, &wanted, |_, bytes| bytes.to_vec())
                .unwrap()
                .into_iter()
                .flatten()
                .collect();
        swept.sort_by_key(|(w, _)| *w);
        assert!(swept == got, "the sweep and the plan differ");
        for (w, bytes) in got {
            let id = objects[w].0;
            assert_eq!(bytes, repo.find_object(id).unwrap().data, "{id}");
        }
    }
}
