//! Validated names: wiki topics and entry ids.

use std::collections::HashSet;
use std::fmt;
use std::hash::BuildHasher;
use std::str::FromStr;

use crate::error::{Error, ErrorKind, Result};

/// The longest accepted topic name or entry id, in bytes.
pub const MAX_NAME_LEN: usize = 64;

/// The name of a wiki topic, which is also its file name: `.squad/memory/wiki/<topic>.md`.
///
/// Rule: 1 to 64 characters, each one of lowercase `a-z`, `0-9`, `-` and `_`.
/// Names that could escape the wiki directory are refused with a reason naming the problem:
/// empty, NUL bytes, absolute paths (`/x`, `\x`, `C:x`), `..`, and the separators `/` and `\`.
///
/// ```
/// use squad_memory::TopicName;
///
/// let auth: TopicName = "auth".parse()?;
/// assert_eq!(auth.as_str(), "auth");
/// for bad in ["", "../etc", "a/b", "/abs", "a\0b", "Auth"] {
///     assert!(bad.parse::<TopicName>().is_err(), "{bad:?}");
/// }
/// # Ok::<(), squad_memory::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct TopicName(String);

impl TopicName {
    /// Checks `name` against the rule and wraps it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] naming the broken rule.
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        match check_path_safe(&name, false) {
            Ok(()) => Ok(Self(name)),
            Err(reason) => Err(Error::new(
                ErrorKind::InvalidInput,
                "topic.parse",
                format!("invalid topic name {name:?}: {reason}"),
            )),
        }
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The `n`th document of the topic, `<topic>-<n>` (the topic cut to fit the length limit);
    /// `None` when that is not a valid name.
    pub(crate) fn continuation(&self, n: usize) -> Option<TopicName> {
        TopicName::new(numbered(&self.0, n)).ok()
    }
}

/// `<base>-<n>`, `base` cut to keep it within [`MAX_NAME_LEN`] bytes (names are ASCII).
fn numbered(base: &str, n: usize) -> String {
    let suffix = format!("-{n}");
    let mut s = base.to_owned();
    s.truncate(MAX_NAME_LEN.saturating_sub(suffix.len()));
    s.push_str(&suffix);
    s
}

/// Checks a name that becomes a file name. `allow_mixed` widens the character set to
/// `A-Z`, `.` and `:` (entry ids), never to separators.
pub(crate) fn check_path_safe(name: &str, allow_mixed: bool) -> std::result::Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.contains('\0') {
        return Err("must not contain NUL".into());
    }
    let b = name.as_bytes();
    if b[0] == b'/' || b[0] == b'\\' || (b.len() > 1 && b[1] == b':' && b[0].is_ascii_alphabetic())
    {
        return Err("must not be an absolute path".into());
    }
    if name.contains("..") {
        return Err("must not contain '..'".into());
    }
    if name.contains('/') || name.contains('\\') {
        return Err("must not contain '/' or '\\'".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!("must be at most {MAX_NAME_LEN} bytes"));
    }
    let ok = name.bytes().all(|c| {
        c.is_ascii_lowercase()
            || c.is_ascii_digit()
            || c == b'-'
            || c == b'_'
            || (allow_mixed && (c.is_ascii_uppercase() || c == b'.' || c == b':'))
    });
    if !ok {
        return Err(if allow_mixed {
            "only a-z, A-Z, 0-9, '-', '_', '.' and ':' are allowed".into()
        } else {
            "only lowercase a-z, 0-9, '-' and '_' are allowed".into()
        });
    }
    Ok(())
}

impl fmt::Display for TopicName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for TopicName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl FromStr for TopicName {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::new(s)
    }
}

/// The stable id of a memory entry (`d-0042`, `h-3f9a0c12d4e5`).
///
/// Rule: 1 to 64 characters of `a-z`, `A-Z`, `0-9`, `-`, `_`, `.` and `:`, never `..`.
/// Entries written without an id get one derived from their date, kind and summary
/// ([`crate::Entry::derived_id`]), so the same entry always has the same id.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct MemoryId(pub(crate) String);

impl MemoryId {
    /// Checks `id` against the rule and wraps it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] naming the broken rule.
    pub fn new(id: impl Into<String>) -> Result<Self> {
        let id = id.into();
        match check_path_safe(&id, true) {
            Ok(()) => Ok(Self(id)),
            Err(reason) => Err(Error::new(
                ErrorKind::InvalidInput,
                "id.parse",
                format!("invalid entry id {id:?}: {reason}"),
            )),
        }
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first `<id>-<n>` (n = 2, 3, ...) not in `used`, the id cut to fit the length limit:
    /// the new id of an entry whose id is taken by a different entry.
    pub(crate) fn fresh<S: BuildHasher>(&self, used: &HashSet<MemoryId, S>) -> MemoryId {
        (2..)
            .map(|n| MemoryId(numbered(&self.0, n)))
            .find(|c| !used.contains(c))
            .unwrap_or_else(|| self.clone())
    }
}

impl fmt::Display for MemoryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for MemoryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl FromStr for MemoryId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::new(s)
    }
}
