//! Where memory documents live: the [`MemoryStore`] trait, [`InMemoryStore`] and [`FsStore`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use squad_fs::{EntryKind, StateDir};
use squad_model::AgentName;

use crate::error::{Error, ErrorKind, Problem, Result, or_skip};
use crate::name::TopicName;

/// A memory tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Current session, per agent; always loaded.
    Hot,
    /// Summarised history, per agent; loaded on demand.
    Cold,
    /// Durable reference, per topic; loaded by topic or relevance.
    Wiki,
    /// Aged entries, per agent; never loaded into a prompt, never deleted.
    Archive,
}

impl Tier {
    /// Every tier.
    pub const ALL: [Tier; 4] = [Tier::Hot, Tier::Cold, Tier::Wiki, Tier::Archive];

    /// The directory name and the JSON name: `hot`, `cold`, `wiki`, `archive`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Tier::Hot => "hot",
            Tier::Cold => "cold",
            Tier::Wiki => "wiki",
            Tier::Archive => "archive",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One memory document: a tier and the agent or topic that owns it.
///
/// Its path under the memory root is `<tier>/<name>.md` ([`DocRef::path`]), the seed's layout:
/// `hot/<agent>.md`, `cold/<agent>.md`, `wiki/<topic>.md`, and `archive/<agent>.md`.
/// Both names are validated types, so a path never escapes the memory root.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DocRef {
    /// `hot/<agent>.md`.
    Hot(AgentName),
    /// `cold/<agent>.md`.
    Cold(AgentName),
    /// `wiki/<topic>.md`.
    Wiki(TopicName),
    /// `archive/<agent>.md`.
    Archive(AgentName),
}

impl DocRef {
    /// The tier of this document.
    pub fn tier(&self) -> Tier {
        match self {
            DocRef::Hot(_) => Tier::Hot,
            DocRef::Cold(_) => Tier::Cold,
            DocRef::Wiki(_) => Tier::Wiki,
            DocRef::Archive(_) => Tier::Archive,
        }
    }

    /// The owner's name (agent or topic).
    pub fn name(&self) -> &str {
        match self {
            DocRef::Hot(a) | DocRef::Cold(a) | DocRef::Archive(a) => a.as_str(),
            DocRef::Wiki(t) => t.as_str(),
        }
    }

    /// The path relative to the memory root, with `/` separators: `hot/data.md`.
    pub fn path(&self) -> String {
        format!("{}/{}.md", self.tier(), self.name())
    }

    /// The document of `tier` named `name`, validating the name for that tier.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] when `name` is not a valid agent name (hot, cold, archive) or
    /// topic name (wiki).
    pub fn new(tier: Tier, name: &str) -> Result<Self> {
        Ok(match tier {
            Tier::Hot => DocRef::Hot(AgentName::new(name)?),
            Tier::Cold => DocRef::Cold(AgentName::new(name)?),
            Tier::Archive => DocRef::Archive(AgentName::new(name)?),
            Tier::Wiki => DocRef::Wiki(TopicName::new(name)?),
        })
    }
}

/// Proof that the caller holds the store's single-writer lock; released on drop.
pub struct StoreLock {
    _held: Box<dyn Send + Sync>,
}

impl StoreLock {
    /// Wraps whatever releases the lock when dropped (for implementors).
    pub fn new(held: impl Send + Sync + 'static) -> Self {
        Self {
            _held: Box::new(held),
        }
    }
}

impl fmt::Debug for StoreLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StoreLock")
    }
}

/// Storage for memory documents, keyed by [`DocRef`].
///
/// The trait is **synchronous**: it is file I/O, and nothing else in this crate is async.
/// It stores whole documents as text; parsing, budgets and the Scribe's moves are the crate's
/// pure logic on top of it.
///
/// # Contract
///
/// - Documents are independent: writing one never changes another.
/// - A write is atomic and durable: after `write` returns `Ok`, every later `read` returns the new
///   text in full, also after a crash; a failed write leaves the old text in place.
/// - `lock` gives at most one holder at a time; every writer (the Scribe, `add`, `supersede`,
///   `import`, a spawn's touch) holds it while it rewrites documents.
///
/// # Behavior
///
/// - [`read`](MemoryStore::read): `Ok(None)` when the document does not exist.
/// - [`write`](MemoryStore::write): creates or replaces; idempotent.
/// - [`list`](MemoryStore::list): the names present in a tier, sorted; names that are not valid
///   for the tier are returned too (so `validate` can report them).
/// - [`lock`](MemoryStore::lock): when held, waits as long as the store is configured to (in
///   arrival order: [`FsStore::with_lock_wait`]), then fails with [`ErrorKind::Locked`]; a store
///   with no wait configured (the default, and [`InMemoryStore`]) fails at once.
///
/// # Implementing
///
/// Implement the four methods and run `squad_memory::conformance::run_all` (feature
/// `conformance`) against your store. Text is UTF-8; report bytes that are not with
/// [`Error::malformed`] naming the file.
///
/// # Wrappers
///
/// `&T`, `Box<T>` and `Arc<T>` implement the trait when `T` does.
#[diagnostic::on_unimplemented(
    note = "implement read, write, list and lock, then run squad_memory::conformance::run_all"
)]
pub trait MemoryStore: Send + Sync + fmt::Debug {
    /// The document's text, or `None` when it does not exist.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Backend`] on I/O failure; [`ErrorKind::InvalidInput`] when it is not UTF-8.
    fn read(&self, doc: &DocRef) -> Result<Option<String>>;

    /// Creates or replaces the document, atomically and durably.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Backend`] on I/O failure (the old text stays).
    fn write(&self, doc: &DocRef, text: &str) -> Result<()>;

    /// The names of the documents in `tier`, sorted.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Backend`] on I/O failure.
    fn list(&self, tier: Tier) -> Result<Vec<String>>;

    /// Takes the single-writer lock, waiting for it as long as the store is configured to (not
    /// at all by default).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Locked`] when another holder still has it once the wait is over (the
    /// message names the holder when the store knows it); [`ErrorKind::Backend`] on I/O
    /// failure.
    fn lock(&self) -> Result<StoreLock>;

    /// Problems the store sees outside the documents: for a file system, symlinks and special
    /// files in the memory directory (never followed, and reported by `validate`). The default
    /// finds none.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Backend`] when the store cannot be examined.
    fn audit(&self) -> Result<Vec<Problem>> {
        Ok(Vec::new())
    }

    /// The search index the store keeps for `doc`, as bytes (see [`crate::build_index`]), or
    /// `None` when it keeps none (the default). An index is derived data, never authoritative:
    /// a reader checks it against the document's text and ignores one that does not match, so
    /// a store may return a stale or missing index, never a wrong result. A spawn only reads
    /// it; stores that keep indexes write them with the documents (in [`MemoryStore::write`]).
    ///
    /// # Errors
    ///
    /// None from the default; a store should return `Ok(None)` rather than fail a spawn over an
    /// index it cannot read.
    fn read_index(&self, doc: &DocRef) -> Result<Option<Vec<u8>>> {
        let _ = doc;
        Ok(None)
    }

    /// Opens the document to be read in parts ([`DocReader`]), or `None` when it does not
    /// exist. A spawn whose search index lays out the document's sections reads it this way:
    /// once through in chunks, to check that the index matches it (its length and hash),
    /// unless the index names the document's [`DocStamp`], then only the sections it loads.
    /// The default reads the whole text ([`MemoryStore::read`]).
    ///
    /// # Errors
    ///
    /// As [`MemoryStore::read`]; a reader that gets an error reads the document with
    /// [`MemoryStore::read`] instead.
    fn open(&self, doc: &DocRef) -> Result<Option<Box<dyn DocReader>>> {
        Ok(self
            .read(doc)?
            .map(|t| Box::new(WholeBytes(t.into_bytes())) as Box<dyn DocReader>))
    }

    /// Opens the search index the store keeps for `doc` to be read in parts, or `None` when
    /// it keeps none: a spawn reads the index's front (what every query needs), then only the
    /// occurrence lists of the words its task asks for. The default reads the whole index
    /// ([`MemoryStore::read_index`]).
    ///
    /// # Errors
    ///
    /// As [`MemoryStore::read_index`].
    fn open_index(&self, doc: &DocRef) -> Result<Option<Box<dyn DocReader>>> {
        Ok(self
            .read_index(doc)?
            .map(|b| Box::new(WholeBytes(b)) as Box<dyn DocReader>))
    }
}

/// A document opened to be read in parts ([`MemoryStore::open`]).
///
/// # Contract
///
/// - [`len`](DocReader::len) is the document's length when it was opened.
/// - [`read_at`](DocReader::read_at) reads bytes of that version of the document, or fails;
///   never fewer bytes than asked for. A store whose documents may be changed in place while
///   open (a file edited by hand) may return bytes of the new version: readers check what they
///   read (a spawn checks the whole text against its index's hash, unless the index names the
///   document's [`stamp`](DocReader::stamp), and each section it parses), and read the
///   document whole when anything does not match.
/// - [`stamp`](DocReader::stamp), when it is `Some`, is the [`DocStamp`] of the version that
///   was opened: any later change to the document's bytes gives it another stamp.
pub trait DocReader: Send + Sync + fmt::Debug {
    /// The document's length in bytes.
    fn len(&self) -> u64;

    /// Whether the document is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fills `buf` with the document's bytes from `offset`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Backend`] on I/O failure, or when the document ends before `buf` is full.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;

    /// The document's version as the store sees it without reading it, if it can tell (see
    /// [`DocStamp`]). The default is `None`: a spawn then reads the document through once to
    /// check that its search index matches it.
    fn stamp(&self) -> Option<DocStamp> {
        None
    }
}

/// A document's version as its store sees it without reading its bytes: for [`FsStore`], the
/// file's device, inode, length, and modification and change times, in nanoseconds.
///
/// A search index records the stamp of the text it was built from, and a spawn that finds the
/// same stamp on the document skips reading the whole text to check its hash. So equal stamps
/// must mean equal bytes. A file's change time is set by every write and cannot be set back
/// by hand, but it is only as fine as the clock's tick, so [`FsStore`] records a stamp only
/// once its clock has moved past the file's last change, and after reading the file through
/// to check that it holds the text indexed: a write in that same tick would otherwise leave
/// the stamp as it was.
///
/// ```
/// use squad_memory::DocStamp;
///
/// let a = DocStamp::from_parts([1, 2, 3, 4, 5]);
/// assert_eq!(a, DocStamp::from_parts(a.parts()));
/// assert_ne!(a, DocStamp::from_parts([1, 2, 3, 4, 6]));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DocStamp([u64; 5]);

impl DocStamp {
    /// A stamp from its parts (a store's own choice of what identifies a version).
    pub const fn from_parts(parts: [u64; 5]) -> Self {
        Self(parts)
    }

    /// The parts the stamp was made from.
    pub const fn parts(&self) -> [u64; 5] {
        self.0
    }

    /// The stamp of a file, from its metadata: `[device, inode, length, modified, changed]`,
    /// the times in nanoseconds since the epoch.
    #[cfg(unix)]
    fn of_file(m: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        let ns = |secs: i64, nanos: i64| {
            secs.wrapping_mul(1_000_000_000)
                .wrapping_add(nanos)
                .cast_unsigned()
        };
        Self([
            m.dev(),
            m.ino(),
            m.len(),
            ns(m.mtime(), m.mtime_nsec()),
            ns(m.ctime(), m.ctime_nsec()),
        ])
    }

    /// The change time part, in nanoseconds since the epoch.
    #[cfg(target_os = "linux")]
    fn changed(&self) -> u64 {
        self.0[4]
    }
}

/// The default [`DocReader`]: the whole document (or index), in memory.
#[derive(Debug)]
pub(crate) struct WholeBytes(pub(crate) Vec<u8>);

impl DocReader for WholeBytes {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let bytes = usize::try_from(offset)
            .ok()
            .and_then(|at| self.0.get(at..at.checked_add(buf.len())?));
        match bytes {
            Some(b) => {
                buf.copy_from_slice(b);
                Ok(())
            }
            None => Err(short_read()),
        }
    }
}

/// How long a writer waits for the file system's clock to move past a document's last change
/// before it records the document's stamp ([`FsStore::settled_stamp`]): a tick is 1 to 10 ms.
#[cfg(target_os = "linux")]
const SETTLE_WAIT: Duration = Duration::from_millis(50);

/// Waits until the clock the kernel stamps files with (`CLOCK_REALTIME_COARSE`) reads later
/// than `changed_ns` (nanoseconds since the epoch) and the file system's grain, for at most
/// [`SETTLE_WAIT`]: `None` when it does not (a change time in the future, a file system that
/// keeps whole seconds) or the clock cannot be read.
#[cfg(target_os = "linux")]
fn clock_past(changed_ns: u64) -> Option<()> {
    use nix::time::{ClockId, clock_gettime};
    // A file system that keeps coarser times (whole microseconds, milliseconds, seconds)
    // truncates them: wait out its grain too; whole seconds are too long to wait for.
    let grain = [1_000_000_000, 1_000_000, 1_000]
        .into_iter()
        .find(|&g| changed_ns.is_multiple_of(g))
        .unwrap_or(1);
    if grain == 1_000_000_000 {
        return None;
    }
    let start = std::time::Instant::now();
    loop {
        let now = clock_gettime(ClockId::CLOCK_REALTIME_COARSE).ok()?;
        let now_ns = i128::from(now.tv_sec()) * 1_000_000_000 + i128::from(now.tv_nsec());
        if now_ns >= i128::from(changed_ns) + i128::from(grain) {
            return Some(());
        }
        if start.elapsed() >= SETTLE_WAIT {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn short_read() -> Error {
    Error::new(
        ErrorKind::Backend,
        "memory.read",
        "the document ended before the bytes asked for",
    )
}

/// [`FsStore`]'s [`DocReader`]: the open file (opened as [`FsStore`] reads: no symlink
/// followed, no file over [`MAX_FILE_BYTES`]).
#[derive(Debug)]
struct FileReader {
    file: std::fs::File,
    len: u64,
    #[cfg(not(unix))]
    at: Mutex<()>,
}

impl FileReader {
    /// The reader of a file opened as [`FsStore`] opens them, and its length.
    fn boxed((file, len): (std::fs::File, u64)) -> Box<dyn DocReader> {
        Box::new(Self {
            file,
            len,
            #[cfg(not(unix))]
            at: Mutex::new(()),
        })
    }
}

impl DocReader for FileReader {
    fn len(&self) -> u64 {
        self.len
    }

    #[cfg(unix)]
    fn stamp(&self) -> Option<DocStamp> {
        self.file.metadata().ok().map(|m| DocStamp::of_file(&m))
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let io = |e: std::io::Error| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                short_read()
            } else {
                Error::new(ErrorKind::Backend, "memory.read", e.to_string()).with_source(e)
            }
        };
        #[cfg(unix)]
        {
            std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, offset).map_err(io)
        }
        #[cfg(not(unix))]
        {
            use std::io::{Read, Seek};
            let _turn = self
                .at
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut f = &self.file;
            f.seek(std::io::SeekFrom::Start(offset)).map_err(io)?;
            f.read_exact(buf).map_err(io)
        }
    }
}

macro_rules! forward {
    ($($t:ty),*) => {$(
        impl<T: MemoryStore + ?Sized> MemoryStore for $t {
            fn read(&self, doc: &DocRef) -> Result<Option<String>> {
                (**self).read(doc)
            }
            fn write(&self, doc: &DocRef, text: &str) -> Result<()> {
                (**self).write(doc, text)
            }
            fn list(&self, tier: Tier) -> Result<Vec<String>> {
                (**self).list(tier)
            }
            fn lock(&self) -> Result<StoreLock> {
                (**self).lock()
            }
            fn audit(&self) -> Result<Vec<Problem>> {
                (**self).audit()
            }
            fn read_index(&self, doc: &DocRef) -> Result<Option<Vec<u8>>> {
                (**self).read_index(doc)
            }
            fn open(&self, doc: &DocRef) -> Result<Option<Box<dyn DocReader>>> {
                (**self).open(doc)
            }
            fn open_index(&self, doc: &DocRef) -> Result<Option<Box<dyn DocReader>>> {
                (**self).open_index(doc)
            }
        }
    )*};
}
forward!(&T, Box<T>, Arc<T>);

/// The reference store: documents in a map behind a mutex. Good for tests and for hosts that
/// keep memory elsewhere.
#[derive(Debug, Default, Clone)]
pub struct InMemoryStore {
    docs: Arc<Mutex<BTreeMap<(Tier, String), String>>>,
    locked: Arc<AtomicBool>,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn map(&self) -> std::sync::MutexGuard<'_, BTreeMap<(Tier, String), String>> {
        // A panic while holding the lock cannot leave the map half-updated (single inserts),
        // so a poisoned lock is still safe to use.
        self.docs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

struct FlagRelease(Arc<AtomicBool>);

impl Drop for FlagRelease {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

fn locked_error() -> Error {
    Error::new(
        ErrorKind::Locked,
        "memory.lock",
        "another writer holds the memory lock",
    )
}

impl MemoryStore for InMemoryStore {
    fn read(&self, doc: &DocRef) -> Result<Option<String>> {
        Ok(self
            .map()
            .get(&(doc.tier(), doc.name().to_owned()))
            .cloned())
    }

    fn write(&self, doc: &DocRef, text: &str) -> Result<()> {
        self.map()
            .insert((doc.tier(), doc.name().to_owned()), text.to_owned());
        Ok(())
    }

    fn list(&self, tier: Tier) -> Result<Vec<String>> {
        Ok(self
            .map()
            .keys()
            .filter(|(t, _)| *t == tier)
            .map(|(_, n)| n.clone())
            .collect())
    }

    fn lock(&self) -> Result<StoreLock> {
        if self
            .locked
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Err(locked_error());
        }
        Ok(StoreLock::new(FlagRelease(self.locked.clone())))
    }
}

/// What [`FsStore::reindex`] did: how many search indexes it wrote, and what it could not index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reindexed {
    /// How many indexes were written.
    pub indexed: usize,
    /// One error-level problem per index that was not written (its file is the index's path
    /// relative to the memory root, as [`FsStore::index_path`] gives it), then one per tier or
    /// document that could not be read (its file is the tier's or the document's path).
    pub failed: Vec<Problem>,
}

/// The largest memory file [`FsStore`] reads (8 MiB): a larger one is an error naming the file,
/// not an allocation.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// The file-system store on the seed's layout, inside a squad state directory (usually
/// `.squad`): `memory/hot/<agent>.md`, `memory/cold/<agent>.md`, `memory/wiki/<topic>.md`,
/// `memory/archive/<agent>.md`.
///
/// Every access goes through [`squad_fs::StateDir`]: no symlink below the state root is ever
/// followed (a symlinked `memory`, tier directory or file is an error naming it, never read or
/// written through), writes are atomic (temporary file, fsync, rename, directory fsync), files
/// over [`MAX_FILE_BYTES`] are refused before they are read. The state root itself may be a
/// symlink the user chose.
///
/// The memory lock is a first-come, first-served queue of tickets in `memory/.lock-queue/`,
/// each an advisory lock on its file (so it dies with its process: a waiter killed with
/// SIGKILL blocks nobody), and the holder also takes the advisory lock on
/// `memory/.scribe.lock`. [`FsStore::with_lock_wait`] sets how long [`MemoryStore::lock`] waits
/// in line (no wait by default); when the wait runs out the error names the command and pid of
/// the holder ([`FsStore::with_lock_command`]). Taking the lock removes the temporary files a
/// killed writer left under `memory/` (every writer holds it).
///
/// ```
/// use std::time::Duration;
/// use squad_memory::{FsStore, MemoryStore};
///
/// let dir = tempfile::tempdir()?;
/// let store = FsStore::new(dir.path().join(".squad"))
///     .with_lock_wait(Duration::from_secs(30))
///     .with_lock_command("my-harness add");
/// let held = store.lock()?;
/// let queue = store.lock_queue()?;
/// assert_eq!((queue.len(), queue[0].pid), (1, std::process::id()));
/// assert_eq!(queue[0].command, "my-harness add");
/// drop(held);
/// assert!(store.lock_queue()?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct FsStore {
    state: StateDir,
    wait: Duration,
    command: String,
}

const MEMORY: &str = "memory";
/// The directory of the search indexes, under the memory root.
const INDEX_DIR: &str = ".index";

impl FsStore {
    /// A store in the state directory `state_root` (created on the first write); the memory
    /// files live in `<state_root>/memory`.
    pub fn new(state_root: impl Into<PathBuf>) -> Self {
        Self {
            state: StateDir::new(state_root),
            wait: Duration::ZERO,
            command: String::new(),
        }
    }

    /// How long [`MemoryStore::lock`] waits in line for the lock (at most
    /// [`MAX_LOCK_WAIT`](crate::MAX_LOCK_WAIT), longer is cut to it); zero (the default) fails at
    /// once when it is held.
    #[must_use]
    pub fn with_lock_wait(mut self, wait: Duration) -> Self {
        self.wait = wait.min(crate::lock::MAX_LOCK_WAIT);
        self
    }

    /// What this process runs, as a waiter that gives up names the holder
    /// (`squad memory add --agent data`). Control characters are replaced by spaces.
    #[must_use]
    pub fn with_lock_command(mut self, command: impl Into<String>) -> Self {
        self.command = command.into();
        self
    }

    /// The lock's queue: every ticket present, first come first, with whether its process
    /// still holds it. The first live ticket holds the lock; a dead ticket (its process was
    /// killed) blocks nobody.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Backend`] when the queue cannot be read; [`ErrorKind::InvalidInput`] when
    /// something in it is not what squad wrote (a symlink).
    pub fn lock_queue(&self) -> Result<Vec<crate::Ticket>> {
        crate::lock::list(&self.state)
    }

    /// Removes the tickets of processes that are gone (what killed waiters leave), returning
    /// them. Live tickets are never touched.
    ///
    /// # Errors
    ///
    /// As [`FsStore::lock_queue`].
    pub fn remove_dead_tickets(&self) -> Result<Vec<crate::Ticket>> {
        crate::lock::remove_dead(&self.state)
    }

    /// The state directory.
    pub fn state(&self) -> &StateDir {
        &self.state
    }

    /// The memory root, `<state_root>/memory` (for messages; never opened by path).
    pub fn root(&self) -> PathBuf {
        self.state.display_path(MEMORY)
    }

    /// The full path of a document (for messages; never opened by path).
    pub fn file_path(&self, doc: &DocRef) -> PathBuf {
        self.state.display_path(Self::rel(doc))
    }

    fn rel(doc: &DocRef) -> String {
        format!("{MEMORY}/{}", doc.path())
    }

    /// Where the search index of `doc` lives: `memory/.index/<tier>/<name>.idx`.
    fn index_rel(doc: &DocRef) -> String {
        format!("{MEMORY}/{}", Self::index_path(doc))
    }

    /// Where the store keeps the search index of `doc`, relative to the memory root, with `/`
    /// separators: `.index/cold/data.idx` (for messages; never opened by path).
    pub fn index_path(doc: &DocRef) -> String {
        format!("{INDEX_DIR}/{}/{}.idx", doc.tier(), doc.name())
    }

    /// Writes the search index of `doc` for `text` (cold, archive and wiki documents), or
    /// removes a stale one when none can be built, returning how many bytes it wrote (`None`
    /// when it built none: a hot document, or one that cannot be parsed). Like a document, an index is never written through a symlink:
    /// a link in its place (or on its way) is an error, and the link and its target stay as
    /// they are.
    fn write_index(
        &self,
        doc: &DocRef,
        text: &str,
    ) -> std::result::Result<Option<usize>, squad_fs::Error> {
        if doc.tier() == Tier::Hot {
            return Ok(None);
        }
        let rel = Self::index_rel(doc);
        let stamp = self.settled_stamp(doc, text);
        match crate::index::build_stamped(doc.tier(), &doc.path(), text, stamp) {
            Some(bytes) => self
                .state
                .write_atomic(&rel, &bytes)
                .map(|()| Some(bytes.len())),
            None => self.state.remove(&rel).map(|_| None),
        }
    }

    /// The stamp of `doc` ([`DocStamp`]) for its index, when the file holds `text`: taken, then
    /// (once the file system's clock has moved past the file's last change, so that any later
    /// write changes the stamp) checked by reading the file through. `None` when the file does
    /// not hold `text`, the clock does not move past it within [`SETTLE_WAIT`], or the system
    /// has no such clock: the index is then written without a stamp, and a spawn checks the
    /// text's hash.
    fn settled_stamp(&self, doc: &DocRef, text: &str) -> Option<DocStamp> {
        #[cfg(target_os = "linux")]
        {
            let reader = self.open(doc).ok()??;
            if reader.len() != text.len() as u64 {
                return None;
            }
            let stamp = reader.stamp()?;
            clock_past(stamp.changed())?;
            let seen = crate::index::scan(reader.as_ref())?;
            (seen == (text.len(), crate::index::text_hash(text.as_bytes()))).then_some(stamp)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (doc, text);
            None
        }
    }

    /// [`FsStore::write_index`] for a document write: best effort, as the index is derived and
    /// a reader ignores one that does not match the text; a failure is logged (and `validate`
    /// reports the index as stale).
    fn write_index_logged(&self, doc: &DocRef, text: &str) {
        match self.write_index(doc, text) {
            Ok(Some(bytes)) => {
                tracing::debug!(file = %doc.path(), bytes, "memory search index written");
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(file = %doc.path(), error = %e, "memory search index not written")
            }
        }
    }

    /// Rebuilds the search index of every cold, archive and wiki document (what a write does
    /// for one), returning how many it wrote and the ones it could not write. Hold the lock
    /// ([`MemoryStore::lock`]) while it runs. An index is never needed (a spawn without one
    /// reads the text), only faster.
    ///
    /// An index that cannot be written (a symlink in its place, which is never written
    /// through nor replaced, or an I/O failure) is not counted: it is one of
    /// [`Reindexed::failed`], naming the index file, and the other documents are indexed all
    /// the same. So is a document that cannot be read as a memory file (a symlink, too large,
    /// not UTF-8: `validate` names it too). A document that cannot be parsed gets no index
    /// (any old one is removed) and is not counted either.
    ///
    /// ```
    /// use squad_memory::{DocRef, FsStore, MemoryStore};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = FsStore::new(dir.path().join(".squad"));
    /// store.write(&DocRef::Cold("data".parse()?), "### 2026-03-14: Deploy\nStaging times out.\n")?;
    /// let _lock = store.lock()?;
    /// let done = store.reindex()?;
    /// assert_eq!((done.indexed, done.failed.len()), (1, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Backend`] when a tier cannot be listed or a document read for a reason
    /// other than what is in the directory (an I/O failure).
    pub fn reindex(&self) -> Result<Reindexed> {
        let mut indexed = 0;
        let mut failed = Vec::new();
        let unreadable = self.for_each_indexed(|doc, text| {
            match self.write_index(&doc, &text) {
                Ok(None) => {}
                Ok(Some(_)) => indexed += 1,
                Err(e) => {
                    tracing::warn!(file = %doc.path(), error = %e, "memory search index not written");
                    failed.push(self.index_problem(&doc, e));
                }
            }
            Ok(())
        })?;
        failed.extend(unreadable);
        Ok(Reindexed { indexed, failed })
    }

    /// The problem an index that could not be written is, naming the index file.
    fn index_problem(&self, doc: &DocRef, e: squad_fs::Error) -> Problem {
        let file = Self::index_path(doc);
        let err = fs_error(&self.state, "memory.index", &file, e);
        match err.problems() {
            [p, ..] => p.clone(),
            [] => Problem::error(file, 1, err.to_string()),
        }
    }

    /// The cold, archive and wiki documents whose search index is missing or does not match
    /// their text (for `squad memory validate` and `squad doctor`: a spawn still works, on the
    /// slower path, and `squad memory index` rebuilds them). A tier or document that cannot be
    /// read as memory (a symlink, a file too large or not UTF-8) is left out: `validate` names
    /// it already.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Backend`] when a tier cannot be listed or a document read for a reason
    /// other than what is in the directory (an I/O failure).
    pub fn stale_indexes(&self) -> Result<Vec<DocRef>> {
        let mut out = Vec::new();
        self.for_each_indexed(|doc, text| {
            let fresh = self
                .read_index(&doc)?
                .is_some_and(|b| crate::index::index_matches(&b, &text));
            if !fresh {
                out.push(doc);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Calls `each` with every cold, archive and wiki document (the ones that have a search
    /// index) and its text, tier by tier, in name order; names not valid for their tier are
    /// passed over. Returns the problems of the tiers and documents that could not be read as
    /// memory (a symlink, a file too large or not UTF-8), which it also passes over.
    ///
    /// # Errors
    ///
    /// The first error of `each`, and [`ErrorKind::Backend`] when a tier cannot be listed or a
    /// document read for a reason other than what is in the directory.
    fn for_each_indexed(
        &self,
        mut each: impl FnMut(DocRef, String) -> Result<()>,
    ) -> Result<Vec<Problem>> {
        let mut unreadable = Vec::new();
        for tier in [Tier::Cold, Tier::Archive, Tier::Wiki] {
            let Some(names) = or_skip(self.list(tier), &mut unreadable)? else {
                continue;
            };
            for name in names {
                let Ok(doc) = DocRef::new(tier, &name) else {
                    continue;
                };
                if let Some(Some(text)) = or_skip(self.read(&doc), &mut unreadable)? {
                    each(doc, text)?;
                }
            }
        }
        Ok(unreadable)
    }
}

/// Turns a state-directory error into ours: what is in the directory (a symlink, a file too
/// large, a directory where a file should be) is bad input naming the file relative to the
/// memory root (`fallback` when the error names no path below it); anything else is a
/// back-end failure.
pub(crate) fn fs_error(
    state: &StateDir,
    op: &'static str,
    fallback: &str,
    e: squad_fs::Error,
) -> Error {
    use squad_fs::ErrorKind as K;
    if e.kind() == K::Io {
        return Error::new(ErrorKind::Backend, op, e.to_string()).with_source(e);
    }
    let file = e
        .path()
        .strip_prefix(state.root())
        .ok()
        .and_then(|p| p.strip_prefix(MEMORY).ok())
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .unwrap_or_else(|| fallback.to_owned());
    let text = e.to_string();
    let prefix = format!("{} ", e.path().display());
    let message = text.strip_prefix(&prefix).unwrap_or(&text).to_owned();
    let message = if e.kind() == K::TooLarge {
        format!("{message}: a memory file may hold at most {MAX_FILE_BYTES} bytes")
    } else {
        message
    };
    Error::malformed(
        op,
        vec![Problem::error(file, e.line().unwrap_or(1), message)],
    )
}

fn utf8(file: &str, bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        Error::malformed(
            "memory.read",
            vec![Problem::error(file, line, "not valid UTF-8")],
        )
    })
}

impl MemoryStore for FsStore {
    fn read(&self, doc: &DocRef) -> Result<Option<String>> {
        match self.state.read_capped(Self::rel(doc), MAX_FILE_BYTES) {
            Ok(None) => Ok(None),
            Ok(Some(bytes)) => utf8(&doc.path(), bytes).map(Some),
            Err(e) => Err(fs_error(&self.state, "memory.read", &doc.path(), e)),
        }
    }

    fn open(&self, doc: &DocRef) -> Result<Option<Box<dyn DocReader>>> {
        match self.state.open_capped(Self::rel(doc), MAX_FILE_BYTES) {
            Ok(None) => Ok(None),
            Ok(Some(opened)) => Ok(Some(FileReader::boxed(opened))),
            Err(e) => Err(fs_error(&self.state, "memory.read", &doc.path(), e)),
        }
    }

    fn write(&self, doc: &DocRef, text: &str) -> Result<()> {
        self.state
            .write_atomic(Self::rel(doc), text.as_bytes())
            .map_err(|e| fs_error(&self.state, "memory.write", &doc.path(), e))?;
        tracing::debug!(file = %doc.path(), bytes = text.len(), "memory document written");
        self.write_index_logged(doc, text);
        Ok(())
    }

    fn list(&self, tier: Tier) -> Result<Vec<String>> {
        let dir = format!("{MEMORY}/{tier}");
        let entries = self
            .state
            .list(&dir)
            .map_err(|e| fs_error(&self.state, "memory.list", tier.as_str(), e))?;
        Ok(entries
            .into_iter()
            .filter(|e| e.kind == EntryKind::File && !e.name.starts_with('.'))
            .filter_map(|e| e.name.strip_suffix(".md").map(str::to_owned))
            .collect())
    }

    fn lock(&self) -> Result<StoreLock> {
        let lock = crate::lock::acquire(&self.state, &self.command, self.wait)?;
        // Every writer holds this lock: what a killed one left half-written is removed by the
        // next (best effort; `squad doctor --fix` removes what stays).
        let _ = self.state.remove_dead_temp_files(MEMORY);
        Ok(StoreLock::new(lock))
    }

    fn read_index(&self, doc: &DocRef) -> Result<Option<Vec<u8>>> {
        if doc.tier() == Tier::Hot {
            return Ok(None);
        }
        // An index that cannot be read (a symlink, too large, an I/O error) is no index.
        match self
            .state
            .read_capped(Self::index_rel(doc), crate::index::MAX_INDEX_BYTES)
        {
            Ok(bytes) => Ok(bytes),
            Err(e) => {
                tracing::debug!(file = %doc.path(), error = %e, "memory search index not read");
                Ok(None)
            }
        }
    }

    fn open_index(&self, doc: &DocRef) -> Result<Option<Box<dyn DocReader>>> {
        if doc.tier() == Tier::Hot {
            return Ok(None);
        }
        // As `read_index`: an index that cannot be opened is no index.
        match self
            .state
            .open_capped(Self::index_rel(doc), crate::index::MAX_INDEX_BYTES)
        {
            Ok(opened) => Ok(opened.map(FileReader::boxed)),
            Err(e) => {
                tracing::debug!(file = %doc.path(), error = %e, "memory search index not opened");
                Ok(None)
            }
        }
    }

    fn audit(&self) -> Result<Vec<Problem>> {
        let findings = self
            .state
            .audit()
            .map_err(|e| fs_error(&self.state, "memory.audit", "", e))?;
        let mut out = Vec::new();
        for f in findings {
            let Ok(rel) = f.path.strip_prefix(MEMORY) else {
                continue;
            };
            let file = rel.to_string_lossy().replace('\\', "/");
            let message = match (f.kind, &f.target) {
                (EntryKind::Symlink, Some(t)) => format!(
                    "is a symbolic link (to {}); squad never follows links inside the state \
                     directory: replace it with the file itself",
                    t.display()
                ),
                (EntryKind::Symlink, None) => "is a symbolic link; squad never follows links \
                                               inside the state directory"
                    .to_owned(),
                _ => "is not a regular file or directory".to_owned(),
            };
            out.push(Problem::error(file, 1, message));
        }
        Ok(out)
    }
}
