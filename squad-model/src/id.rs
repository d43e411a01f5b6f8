//! Identifiers: note entry ids and the ids of the squad object model.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};

/// The unique, sortable id of a note entry: a UUIDv7 or a ULID.
///
/// Both forms start with a millisecond timestamp, so ids of one form sort by creation time.
/// [`EntryId::generate`] makes a UUIDv7 (lowercase, hyphenated); ids written by other tools in
/// ULID form (26 Crockford base-32 characters) are accepted too.
///
/// An id is at most 36 ASCII characters and is held inline, without an allocation: entries are
/// parsed by the hundred thousand when a namespace is read whole. It orders, compares and
/// hashes as its text does.
///
/// ```
/// use squad_model::EntryId;
///
/// let a = EntryId::generate();
/// let b = EntryId::generate();
/// assert!(a < b, "ids made later sort later");
/// assert!("01ARZ3NDEKTSV4RRFFQ69G5FAV".parse::<EntryId>().is_ok()); // a ULID
/// assert!("not-an-id".parse::<EntryId>().is_err());
/// ```
// The text comes first and is padded with zero bytes, which no id contains: the derived order
// and equality are those of the text ("abc" before "abcd", as the zero sorts first).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct EntryId {
    bytes: [u8; ENTRY_ID_MAX],
    len: u8,
}

/// The longest entry id: a hyphenated UUID.
const ENTRY_ID_MAX: usize = 36;

impl EntryId {
    /// A fresh UUIDv7, monotonic within this process.
    pub fn generate() -> Self {
        let mut buf = uuid::Uuid::encode_buffer();
        Self::inline(uuid::Uuid::now_v7().hyphenated().encode_lower(&mut buf))
    }

    /// Checks that `value` is a UUIDv7 or a ULID and wraps it unchanged.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidId`] when it is neither.
    pub fn new(value: impl AsRef<str> + Into<String>) -> Result<Self> {
        Self::check(value.as_ref()).ok_or_else(|| Error::InvalidId {
            what: "entry id",
            value: value.into(),
            reason: "must be a UUIDv7 (8-4-4-4-12 hex, version 7) or a ULID (26 Crockford base-32 characters)",
        })
    }

    /// The id, when `value` is a valid one.
    fn check(value: &str) -> Option<Self> {
        (is_ulid(value) || is_uuid_v7(value)).then(|| Self::inline(value))
    }

    /// Holds `value`, which is checked already (at most 36 ASCII characters).
    fn inline(value: &str) -> Self {
        let mut bytes = [0u8; ENTRY_ID_MAX];
        let len = value.len().min(ENTRY_ID_MAX);
        bytes[..len].copy_from_slice(&value.as_bytes()[..len]);
        Self {
            len: len as u8,
            bytes,
        }
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        // Both forms are ASCII, so this never falls back.
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or_default()
    }
}

/// Hashes as the id string does.
impl std::hash::Hash for EntryId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

fn is_ulid(s: &str) -> bool {
    let bytes = s.as_bytes();
    bytes.len() == 26 && matches!(bytes[0], b'0'..=b'7') && bytes.iter().all(is_crockford)
}

/// A digit of Crockford's base 32, in either case: 0-9 and A-Z without I, L, O and U.
fn is_crockford(b: &u8) -> bool {
    matches!(
        b.to_ascii_uppercase(),
        b'0'..=b'9' | b'A'..=b'H' | b'J' | b'K' | b'M' | b'N' | b'P'..=b'T' | b'V'..=b'Z'
    )
}

fn is_uuid_v7(s: &str) -> bool {
    s.len() == 36
        && s.as_bytes().get(14) == Some(&b'7')
        && uuid::Uuid::try_parse(s).is_ok_and(|u| u.get_version_num() == 7)
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl FromStr for EntryId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::new(s)
    }
}

impl Serialize for EntryId {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Reads the id from borrowed text where the format allows, without an allocation.
impl<'de> Deserialize<'de> for EntryId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = EntryId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an entry id (a UUIDv7 or a ULID)")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<EntryId, E> {
                EntryId::from_str(v).map_err(E::custom)
            }
        }
        d.deserialize_str(Text)
    }
}

/// `true` when `value` holds no whitespace and no control character. ASCII is checked byte by
/// byte (ids are nearly always ASCII); other text char by char.
fn is_opaque_id(value: &str) -> bool {
    if value.is_ascii() {
        // ASCII whitespace and control characters are exactly the bytes up to 0x20, and 0x7f.
        value.bytes().all(|b| b > b' ' && b != 0x7f)
    } else {
        !value.chars().any(|c| c.is_whitespace() || c.is_control())
    }
}

macro_rules! opaque_id {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        ///
        /// Opaque: any non-empty string without whitespace or control characters
        /// (multica uses UUIDs). Compared and hashed as its string. Shared, immutable text:
        /// a clone copies no bytes.
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(Arc<str>);

        impl $name {
            /// Checks and wraps `value`.
            ///
            /// # Errors
            ///
            /// [`Error::InvalidId`] when it is empty or holds whitespace or control characters.
            pub fn new(value: impl AsRef<str> + Into<String>) -> Result<Self> {
                let text = value.as_ref();
                if text.is_empty() {
                    return Err(Error::InvalidId {
                        what: $what,
                        value: value.into(),
                        reason: "must not be empty",
                    });
                }
                if !is_opaque_id(text) {
                    return Err(Error::InvalidId {
                        what: $what,
                        value: value.into(),
                        reason: "must not contain whitespace or control characters",
                    });
                }
                Ok(Self(Arc::from(text)))
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.0)
            }
        }

        impl FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                Self::new(s)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                Self::new(s).map_err(serde::de::Error::custom)
            }
        }
    };
}

opaque_id!(
    /// The id of a human user (a workspace member).
    UserId, "user id"
);
opaque_id!(
    /// The id of an agent.
    AgentId, "agent id"
);
opaque_id!(
    /// The id of a squad.
    SquadId, "squad id"
);
opaque_id!(
    /// The id of a squad membership row.
    SquadMemberId, "squad member id"
);
opaque_id!(
    /// The id of a workspace.
    WorkspaceId, "workspace id"
);
opaque_id!(
    /// The id of an issue.
    IssueId, "issue id"
);
opaque_id!(
    /// The id of a task in an agent's queue.
    TaskId, "task id"
);
opaque_id!(
    /// The id of an agent runtime (the process host an agent is bound to).
    RuntimeId, "runtime id"
);
opaque_id!(
    /// The id of a comment on an issue.
    CommentId, "comment id"
);
opaque_id!(
    /// The id of an autopilot.
    AutopilotId, "autopilot id"
);

#[cfg(test)]
mod tests {
    use super::*;

    /// The range check accepts exactly the 32 letters of Crockford's alphabet, in either case,
    /// over all 256 byte values.
    #[test]
    fn crockford_digits_are_exactly_the_alphabet() {
        const ALPHABET: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
        for b in 0..=u8::MAX {
            assert_eq!(
                is_crockford(&b),
                ALPHABET.contains(&b.to_ascii_uppercase()),
                "byte {b:#04x}"
            );
        }
    }
}
