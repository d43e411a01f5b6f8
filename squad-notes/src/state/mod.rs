//! Permanent squad state: a small key-value store of files (`decisions.md`, `research/…`, the
//! promotion ledger) behind the [`StateStore`] trait.
//!
//! Notes are commit-scoped and short-lived; state is what outlives a feature branch. Three stores
//! ship with the crate:
//!
//! | Store | Where the bytes live | Atomicity of [`StateStore::apply`] |
//! |---|---|---|
//! | `OrphanBranchStore` (feature `gix`) | commits on the branch `squad-state`, built with plumbing only | one commit per batch, compare-and-swap on the ref, retried |
//! | [`WorktreeStateStore`] | plain files under a directory (usually `.squad/`) | each key is replaced atomically (temp file + rename) under a lock file |
//! | [`InMemoryStateStore`] | a map in memory | one mutex-protected step |
//!
//! # Keys
//!
//! A key is a relative, slash-separated path such as `decisions.md`, `research/2026-11-30-jwt.md`
//! or `ledger/promoted`. [`validate_key`] states the rules; every store applies the same rules, so a
//! key that one store accepts works in every store. A key is either a value or a directory of other
//! keys, never both: writing `a/b` while `a` holds a value (or writing `a` while `a/b` exists) is
//! refused with [`ErrorKind::InvalidInput`].
//!
//! # Example
//!
//! ```
//! use squad_notes::state::{InMemoryStateStore, StateEdit, StateStore, StateStoreExt};
//!
//! # fn main() -> squad_notes::Result<()> {
//! let store = InMemoryStateStore::new();
//! store.write("decisions.md", b"# Decisions\n")?;
//! store.append("decisions.md", b"- Use JWT RS256\n")?;
//! // Several keys change together, or none does.
//! store.apply(&[
//!     StateEdit::append("decisions.md", "- Keep notes one line per entry\n"),
//!     StateEdit::append("ledger/promoted", "0190a1b2\n"),
//! ])?;
//! assert_eq!(
//!     store.read("decisions.md")?.as_deref(),
//!     Some(&b"# Decisions\n- Use JWT RS256\n- Keep notes one line per entry\n"[..])
//! );
//! assert_eq!(store.list("")?, ["decisions.md", "ledger/promoted"]);
//! assert_eq!(store.read("missing.md")?, None);
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;

use crate::{Error, ErrorKind, Result};

mod memory;
#[cfg(feature = "gix")]
mod orphan;
mod plan;
mod worktree;

#[cfg(feature = "conformance")]
#[cfg_attr(docsrs, doc(cfg(feature = "conformance")))]
pub mod conformance;

pub use memory::InMemoryStateStore;
#[cfg(feature = "gix")]
#[cfg_attr(docsrs, doc(cfg(feature = "gix")))]
pub use orphan::{MergeFile, OrphanBranchStore, STATE_REF};
pub use worktree::WorktreeStateStore;

/// The longest key accepted, in bytes.
pub const MAX_KEY_LEN: usize = 1024;
/// The longest key segment (the part between two `/`) accepted, in bytes.
pub const MAX_SEGMENT_LEN: usize = 255;
/// Key segments starting with this prefix are reserved for the stores' own files (lock and
/// temporary files of [`WorktreeStateStore`]).
pub const RESERVED_PREFIX: &str = ".squad-";

/// One change to the state, applied by [`StateStore::apply`].
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateEdit {
    /// Replace the value of `key` (creating it if missing) with `value`.
    Write {
        /// The key.
        key: String,
        /// The new value, stored byte for byte.
        value: Vec<u8>,
    },
    /// Append `bytes` to the value of `key` (a missing key counts as empty and is created).
    Append {
        /// The key.
        key: String,
        /// The bytes added at the end, stored byte for byte.
        bytes: Vec<u8>,
    },
    /// Remove `key`. Removing a missing key changes nothing and is not an error.
    Delete {
        /// The key.
        key: String,
    },
    /// A precondition, not a change: the batch applies only if `key` holds exactly `value`
    /// (`None`: the key is missing) at this point of the batch; otherwise the whole batch fails
    /// with [`ErrorKind::Conflict`] and nothing changes.
    ///
    /// This turns [`StateStore::apply`] into a compare-and-swap on the keys a caller read: read
    /// them, compute the edits, apply them behind `Expect`s of what was read, and on `Conflict`
    /// start again from a fresh read (the promotion ledger works this way). Stores check it
    /// against the very state the batch is applied to, so it holds under concurrent writers.
    Expect {
        /// The key.
        key: String,
        /// The value the key must hold, `None` when it must be missing (or a directory).
        value: Option<Vec<u8>>,
    },
}

impl StateEdit {
    /// A [`StateEdit::Write`].
    pub fn write(key: impl Into<String>, value: impl Into<Vec<u8>>) -> Self {
        StateEdit::Write {
            key: key.into(),
            value: value.into(),
        }
    }

    /// A [`StateEdit::Append`].
    pub fn append(key: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        StateEdit::Append {
            key: key.into(),
            bytes: bytes.into(),
        }
    }

    /// A [`StateEdit::Delete`].
    pub fn delete(key: impl Into<String>) -> Self {
        StateEdit::Delete { key: key.into() }
    }

    /// A [`StateEdit::Expect`]: the batch applies only if `key` holds `value` (`None`: missing).
    pub fn expect(key: impl Into<String>, value: Option<impl Into<Vec<u8>>>) -> Self {
        StateEdit::Expect {
            key: key.into(),
            value: value.map(Into::into),
        }
    }

    /// The key this edit changes (or, for [`StateEdit::Expect`], checks).
    pub fn key(&self) -> &str {
        match self {
            StateEdit::Write { key, .. }
            | StateEdit::Append { key, .. }
            | StateEdit::Delete { key }
            | StateEdit::Expect { key, .. } => key,
        }
    }
}

impl fmt::Debug for StateEdit {
    /// Prints the key and the byte count, not the bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateEdit::Write { key, value } => f
                .debug_struct("Write")
                .field("key", key)
                .field("len", &value.len())
                .finish(),
            StateEdit::Append { key, bytes } => f
                .debug_struct("Append")
                .field("key", key)
                .field("len", &bytes.len())
                .finish(),
            StateEdit::Delete { key } => f.debug_struct("Delete").field("key", key).finish(),
            StateEdit::Expect { key, value } => f
                .debug_struct("Expect")
                .field("key", key)
                .field("len", &value.as_ref().map(Vec::len))
                .finish(),
        }
    }
}

/// Permanent squad state: byte values under validated, slash-separated keys.
///
/// The trait is synchronous: every store does local I/O only and the crate has no async runtime.
/// It is object safe; hosts may hold an `Arc<dyn StateStore>`.
///
/// # Contract
///
/// - Keys are checked with [`validate_key`] before anything is read or changed; an invalid key is
///   [`ErrorKind::InvalidInput`] and nothing changes.
/// - Values round-trip byte for byte (trailing newlines, NUL bytes, invalid UTF-8 included).
/// - A key is a value or a directory of other keys, never both (see the [module docs](self)).
/// - [`apply`](StateStore::apply) is all or nothing with respect to other callers: a reader sees
///   the state before the batch or after it, and concurrent batches never lose each other's
///   changes. In particular concurrent appends to one key all land.
///
/// # Behavior
///
/// - [`read`](StateStore::read): `Ok(None)` for a missing key and for a key that is a directory.
/// - [`list`](StateStore::list): every key that starts with `prefix` (a plain string prefix:
///   `"research/"` lists the directory, `"dec"` matches `decisions.md`), sorted by bytes,
///   without duplicates; `""` lists everything. A prefix whose directory part (everything up to
///   the last `/`) is not a valid key, or that contains a control character or a backslash, is
///   [`ErrorKind::InvalidInput`].
/// - [`apply`](StateStore::apply): the edits are applied in order, as one step. `Delete` of a
///   missing key is a no-op (idempotent); `Append` to a missing key creates it; an `Expect`
///   that does not hold fails the batch with [`ErrorKind::Conflict`]. A batch that
///   changes nothing leaves the store untouched. An empty batch is a no-op. If any edit is
///   invalid, nothing is applied. Directories left empty by a delete disappear.
///
/// # Implementing
///
/// Implement the three methods; [`StateStoreExt`] adds `write`, `append`, `delete` and
/// `contains` on top. Run `conformance::run_all` (feature `conformance`) against your store:
/// it checks every sentence above, including eight threads appending to one key at once.
///
/// # Wrappers
///
/// `Box<S>`, `Arc<S>` and `&S` (for any `S: StateStore + ?Sized`) forward every method.
#[diagnostic::on_unimplemented(
    note = "implement `read`, `list` and `apply`; `StateStoreExt` then adds `write`, `append` and `delete`"
)]
pub trait StateStore: Send + Sync + fmt::Debug {
    /// The value of `key`, or `None` when the key is missing (or is a directory).
    fn read(&self, key: &str) -> Result<Option<Vec<u8>>>;

    /// The keys starting with `prefix`, sorted by bytes.
    fn list(&self, prefix: &str) -> Result<Vec<String>>;

    /// Applies `edits` in order as one atomic step.
    fn apply(&self, edits: &[StateEdit]) -> Result<()>;
}

/// Conveniences on every [`StateStore`]. Do not implement this trait; it has a blanket impl.
pub trait StateStoreExt: StateStore {
    /// Replaces the value of `key` with `value` (one [`StateEdit::Write`]).
    fn write(&self, key: &str, value: &[u8]) -> Result<()> {
        self.apply(&[StateEdit::write(key, value)])
    }

    /// Appends `bytes` to `key` (one [`StateEdit::Append`]); never loses a concurrent append.
    fn append(&self, key: &str, bytes: &[u8]) -> Result<()> {
        self.apply(&[StateEdit::append(key, bytes)])
    }

    /// Removes `key` (one [`StateEdit::Delete`]); a missing key is not an error.
    fn delete(&self, key: &str) -> Result<()> {
        self.apply(&[StateEdit::delete(key)])
    }

    /// `true` when `key` holds a value.
    fn contains(&self, key: &str) -> Result<bool> {
        Ok(self.read(key)?.is_some())
    }
}

impl<T: StateStore + ?Sized> StateStoreExt for T {}

macro_rules! forward_state_store {
    ($($ty:ty),*) => {$(
        #[deny(clippy::missing_trait_methods)]
        impl<T: StateStore + ?Sized> StateStore for $ty {
            fn read(&self, key: &str) -> Result<Option<Vec<u8>>> {
                (**self).read(key)
            }
            fn list(&self, prefix: &str) -> Result<Vec<String>> {
                (**self).list(prefix)
            }
            fn apply(&self, edits: &[StateEdit]) -> Result<()> {
                (**self).apply(edits)
            }
        }
    )*};
}

forward_state_store!(Box<T>, Arc<T>, &T);

/// Checks that `key` is a valid state key.
///
/// A key is 1 to [`MAX_KEY_LEN`] bytes of `/`-separated segments. It is refused (with
/// [`ErrorKind::InvalidInput`] and a message naming the problem) when it:
/// - starts or ends with `/`, or has an empty segment (`a//b`);
/// - has a `.` or `..` segment, or a `.git` segment (any case: git refuses such trees);
/// - has a segment starting with [`RESERVED_PREFIX`];
/// - has a segment longer than [`MAX_SEGMENT_LEN`] bytes;
/// - contains a control character (NUL, `\n`, `\r`, `\t`, …) or a backslash.
///
/// Spaces and any other Unicode are allowed.
///
/// ```
/// use squad_notes::state::validate_key;
/// assert!(validate_key("research/2026-11-30 jwt.md").is_ok());
/// assert!(validate_key("../etc/passwd").is_err());
/// assert!(validate_key("a//b").is_err());
/// ```
pub fn validate_key(key: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::new(
            ErrorKind::InvalidInput,
            "state.key",
            format!("invalid state key {key:?}: {why}"),
        ))
    };
    if key.is_empty() {
        return bad("it is empty");
    }
    if key.len() > MAX_KEY_LEN {
        return bad(&format!("it is longer than {MAX_KEY_LEN} bytes"));
    }
    if key.starts_with('/') {
        return bad("it starts with '/' (keys are relative)");
    }
    if key.ends_with('/') {
        return bad("it ends with '/'");
    }
    if let Some(c) = key.chars().find(|c| c.is_control() || *c == '\\') {
        return bad(&format!("it contains the character {c:?}"));
    }
    for segment in key.split('/') {
        if segment.is_empty() {
            return bad("it has an empty segment ('//')");
        }
        if segment == "." || segment == ".." {
            return bad(&format!("it has a '{segment}' segment"));
        }
        if segment.eq_ignore_ascii_case(".git") {
            return bad("it has a '.git' segment");
        }
        if segment.starts_with(RESERVED_PREFIX) {
            return bad(&format!(
                "segments starting with {RESERVED_PREFIX:?} are reserved"
            ));
        }
        if segment.len() > MAX_SEGMENT_LEN {
            return bad(&format!("a segment is longer than {MAX_SEGMENT_LEN} bytes"));
        }
    }
    Ok(())
}

/// Checks a [`StateStore::list`] prefix and returns its directory part (`""` for the root).
///
/// The directory part (everything before the last `/`) must be a valid key; the rest must not
/// contain a control character or a backslash.
pub(crate) fn prefix_dir(prefix: &str) -> Result<&str> {
    let (dir, rest) = match prefix.rfind('/') {
        Some(i) => (&prefix[..i], &prefix[i + 1..]),
        None => ("", prefix),
    };
    if !dir.is_empty() {
        validate_key(dir).map_err(|e| {
            Error::new(
                ErrorKind::InvalidInput,
                "state.list",
                format!("invalid list prefix {prefix:?}: {}", e.message()),
            )
        })?;
    } else if prefix.starts_with('/') {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "state.list",
            format!("invalid list prefix {prefix:?}: it starts with '/'"),
        ));
    }
    if let Some(c) = rest.chars().find(|c| c.is_control() || *c == '\\') {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "state.list",
            format!("invalid list prefix {prefix:?}: it contains the character {c:?}"),
        ));
    }
    Ok(dir)
}

/// A random number for backoff jitter and temporary file names (not for anything secret).
#[cfg(feature = "gix")]
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.finish()
}
