//! Our own identifiers for git objects and notes refs, so that no backend type leaks into the API.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, ErrorKind, Result};

/// A git object id in lowercase hex: 40 digits (SHA-1) or 64 digits (SHA-256).
///
/// Used for annotated objects (usually commits) and for the tips of notes refs.
/// It never requires the object to exist: notes may annotate objects that are not present locally.
/// The hex digits are held inline, without an allocation (bulk reads return one per note); it
/// orders, compares and hashes as its text does.
///
/// ```
/// use squad_notes::Oid;
///
/// let oid: Oid = "0123456789ABCDEF0123456789abcdef01234567".parse()?;
/// assert_eq!(oid.as_str(), "0123456789abcdef0123456789abcdef01234567");
/// assert!("xyz".parse::<Oid>().is_err());
/// # Ok::<(), squad_notes::Error>(())
/// ```
// The text comes first and is padded with zero bytes, which no id contains: the derived order
// and equality are those of the text ("abc" before "abcd", as the zero sorts first).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Oid {
    hex: [u8; OID_HEX_MAX],
    len: u8,
}

/// The longest object id in hex (SHA-256).
const OID_HEX_MAX: usize = 64;

impl Oid {
    /// Checks `hex` (40 or 64 hex digits, any case) and stores it in lowercase.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] naming the value.
    pub fn new(hex: &str) -> Result<Self> {
        if (hex.len() == 40 || hex.len() == 64) && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            // Checked above; stored as given, then lowercased in place (no copy of the text).
            let mut oid = Self::from_lower_hex(hex);
            oid.hex.make_ascii_lowercase();
            Ok(oid)
        } else {
            Err(Error::new(
                ErrorKind::InvalidInput,
                "oid",
                format!("invalid object id {hex:?}: expected 40 or 64 hex digits"),
            ))
        }
    }

    /// Holds `hex`, lowercase hex digits that are known to be valid (from a backend).
    pub(crate) fn from_lower_hex(hex: &str) -> Self {
        let mut out = [0u8; OID_HEX_MAX];
        let len = hex.len().min(OID_HEX_MAX);
        out[..len].copy_from_slice(&hex.as_bytes()[..len]);
        Self {
            len: len as u8,
            hex: out,
        }
    }

    /// The id as lowercase hex.
    pub fn as_str(&self) -> &str {
        // Hex digits are ASCII, so this never falls back.
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    fn as_bytes(&self) -> &[u8] {
        self.hex.get(..usize::from(self.len)).unwrap_or_default()
    }
}

/// Hashes as the hex text does.
impl std::hash::Hash for Oid {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Display for Oid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Oid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Oid({})", self.as_str())
    }
}

impl FromStr for Oid {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::new(s)
    }
}

/// The full name of a notes ref: `refs/notes/` followed by one or more valid ref components.
///
/// Backends take full names only and never expand short names (git2 famously does not, see the
/// crate docs). For squad namespaces use [`NotesRef::squad`].
///
/// ```
/// use squad_model::AgentName;
/// use squad_notes::NotesRef;
///
/// let r = NotesRef::squad(&AgentName::new("data")?);
/// assert_eq!(r.as_str(), "refs/notes/squad/data");
/// assert!(NotesRef::new("refs/heads/main").is_err());
/// assert!(NotesRef::new("refs/notes/a..b").is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NotesRef(String);

impl NotesRef {
    /// Checks `full_name`: it must start with `refs/notes/` and every component must be a plain,
    /// valid ref component (no `..`, no leading `.`, no `.lock` suffix, no control characters,
    /// spaces or any of `~^:?*[\`, no `@{`).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] naming the rule.
    pub fn new(full_name: &str) -> Result<Self> {
        let bad = |why: &str| {
            Error::new(
                ErrorKind::InvalidInput,
                "notes_ref",
                format!("invalid notes ref {full_name:?}: {why}"),
            )
        };
        let rest = full_name
            .strip_prefix("refs/notes/")
            .ok_or_else(|| bad("must start with refs/notes/"))?;
        if rest.is_empty() {
            return Err(bad("must name a ref below refs/notes/"));
        }
        for comp in rest.split('/') {
            if comp.is_empty() || comp.starts_with('.') || comp.ends_with(".lock") {
                return Err(bad("empty component, leading '.' or '.lock' suffix"));
            }
            if comp.contains("..") || comp.contains("@{") {
                return Err(bad("contains '..' or '@{'"));
            }
            if comp
                .chars()
                .any(|c| c.is_control() || c == ' ' || "~^:?*[\\".contains(c))
            {
                return Err(bad("contains a forbidden character"));
            }
        }
        Ok(Self(full_name.to_owned()))
    }

    /// The notes ref of a squad namespace: `refs/notes/squad/<namespace>`.
    pub fn squad(namespace: &squad_model::AgentName) -> Self {
        // Every AgentName is a valid ref component (squad-model's invariant).
        Self(namespace.notes_ref())
    }

    /// The full name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NotesRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for NotesRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NotesRef({})", self.0)
    }
}

impl FromStr for NotesRef {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::new(s)
    }
}

/// What kind of object a note annotates, as `squad notes list --json` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ObjectType {
    /// A commit.
    Commit,
    /// An annotated tag.
    Tag,
    /// A tree.
    Tree,
    /// A blob.
    Blob,
    /// Not in the repository (notes may annotate objects fetched without their notes' objects).
    Missing,
}

impl ObjectType {
    /// The lowercase name: `commit`, `tag`, `tree`, `blob` or `missing`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ObjectType::Commit => "commit",
            ObjectType::Tag => "tag",
            ObjectType::Tree => "tree",
            ObjectType::Blob => "blob",
            ObjectType::Missing => "missing",
        }
    }
}

impl fmt::Display for ObjectType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
