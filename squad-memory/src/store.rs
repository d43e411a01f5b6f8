//! Where memory documents live: the [`MemoryStore`] trait, [`InMemoryStore`] and [`FsStore`].

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use squad_model::AgentName;

use crate::error::{Error, ErrorKind, Problem, Result};
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
/// - `lock` gives at most one holder at a time; the Scribe holds it while it rewrites tiers.
///
/// # Behavior
///
/// - [`read`](MemoryStore::read): `Ok(None)` when the document does not exist.
/// - [`write`](MemoryStore::write): creates or replaces; idempotent.
/// - [`list`](MemoryStore::list): the names present in a tier, sorted; names that are not valid
///   for the tier are returned too (so `validate` can report them).
/// - [`lock`](MemoryStore::lock): [`ErrorKind::Locked`] at once (no waiting) when held.
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

    /// Takes the single-writer lock, or fails at once with [`ErrorKind::Locked`].
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Locked`] when another holder has it; [`ErrorKind::Backend`] on I/O failure.
    fn lock(&self) -> Result<StoreLock>;
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
        "another Scribe holds the memory lock; try again when it finishes",
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

/// The file-system store on the seed's layout under a memory root (usually `.squad/memory`):
/// `hot/<agent>.md`, `cold/<agent>.md`, `wiki/<topic>.md`, `archive/<agent>.md`.
///
/// Writes go to a temporary file in the same directory, are fsynced, renamed over the target,
/// and the directory is fsynced, so a crash leaves either the old or the new text. The lock is
/// an advisory exclusive lock (`fs4`) on `<root>/.scribe.lock`, released when the process exits.
#[derive(Debug, Clone)]
pub struct FsStore {
    root: PathBuf,
}

impl FsStore {
    /// A store rooted at `root` (created on the first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The memory root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The absolute path of a document.
    pub fn file_path(&self, doc: &DocRef) -> PathBuf {
        self.root
            .join(doc.tier().as_str())
            .join(format!("{}.md", doc.name()))
    }
}

struct FileLock(File);

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = fs4::fs_std::FileExt::unlock(&self.0);
    }
}

impl MemoryStore for FsStore {
    fn read(&self, doc: &DocRef) -> Result<Option<String>> {
        let path = self.file_path(doc);
        match fs::read(&path) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(s) => Ok(Some(s)),
                Err(e) => {
                    let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
                        .iter()
                        .filter(|b| **b == b'\n')
                        .count();
                    Err(Error::malformed(
                        "memory.read",
                        vec![Problem {
                            file: doc.path(),
                            line,
                            message: "not valid UTF-8".into(),
                        }],
                    ))
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(
                "memory.read",
                format_args!("read {}", path.display()),
                e,
            )),
        }
    }

    fn write(&self, doc: &DocRef, text: &str) -> Result<()> {
        let path = self.file_path(doc);
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        let op = "memory.write";
        fs::create_dir_all(&dir)
            .map_err(|e| Error::io(op, format_args!("create {}", dir.display()), e))?;
        let tmp = dir.join(format!(".{}.md.tmp-{}", doc.name(), std::process::id()));
        let result = (|| -> std::io::Result<()> {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            drop(f);
            fs::rename(&tmp, &path)?;
            // Make the rename itself durable.
            File::open(&dir)?.sync_all()
        })();
        result.map_err(|e| {
            let _ = fs::remove_file(&tmp);
            Error::io(op, format_args!("write {}", path.display()), e)
        })
    }

    fn list(&self, tier: Tier) -> Result<Vec<String>> {
        let dir = self.root.join(tier.as_str());
        let rd = match fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(Error::io(
                    "memory.list",
                    format_args!("list {}", dir.display()),
                    e,
                ));
            }
        };
        let mut names = Vec::new();
        for ent in rd {
            let ent = ent
                .map_err(|e| Error::io("memory.list", format_args!("list {}", dir.display()), e))?;
            let name = ent.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            if let Some(stem) = name.strip_suffix(".md") {
                names.push(stem.to_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    fn lock(&self) -> Result<StoreLock> {
        let op = "memory.lock";
        fs::create_dir_all(&self.root)
            .map_err(|e| Error::io(op, format_args!("create {}", self.root.display()), e))?;
        let path = self.root.join(".scribe.lock");
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::io(op, format_args!("open {}", path.display()), e))?;
        match fs4::fs_std::FileExt::try_lock_exclusive(&f) {
            Ok(true) => Ok(StoreLock::new(FileLock(f))),
            Ok(false) => Err(locked_error()),
            Err(e) => Err(Error::io(op, format_args!("lock {}", path.display()), e)),
        }
    }
}
