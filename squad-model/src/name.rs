//! Agent names and the notes namespaces they own.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};

/// The longest accepted agent name, in bytes.
pub const MAX_AGENT_NAME_LEN: usize = 64;

/// The prefix under which every squad notes ref lives.
pub const NOTES_REF_PREFIX: &str = "refs/notes/squad/";

/// The names of the shared, append-only namespaces.
pub const SHARED_NAMESPACES: [&str; 2] = ["research", "review"];

/// The name of a squad agent, which is also the name of its notes namespace.
///
/// Rule: 1 to 64 characters, each one of lowercase `a-z`, `0-9`, `-` and `_`.
/// Every accepted name is a valid git ref component, so
/// `refs/notes/squad/<name>` is always a valid ref (`git check-ref-format` agrees).
/// The names `research` and `review` are the shared namespaces ([`AgentName::is_shared`]):
/// any agent may append there, nobody owns them.
///
/// ```
/// use squad_model::AgentName;
///
/// let data: AgentName = "data".parse()?;
/// assert_eq!(data.notes_ref(), "refs/notes/squad/data");
/// assert!(!data.is_shared());
/// assert!("research".parse::<AgentName>()?.is_shared());
/// assert!("Data".parse::<AgentName>().is_err());
/// assert!("../x".parse::<AgentName>().is_err());
/// # Ok::<(), squad_model::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AgentName(String);

impl AgentName {
    /// Checks `name` against the naming rule and wraps it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidAgentName`] naming the broken rule.
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        match check(&name) {
            Ok(()) => Ok(Self(name)),
            Err(reason) => Err(Error::InvalidAgentName { name, reason }),
        }
    }

    /// `true` when `name` follows the naming rule, so that [`AgentName::new`] would accept it;
    /// checks without copying the text.
    ///
    /// ```
    /// use squad_model::AgentName;
    /// assert!(AgentName::is_valid("data"));
    /// assert!(!AgentName::is_valid("Data"));
    /// ```
    pub fn is_valid(name: &str) -> bool {
        check(name).is_ok()
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `true` for the shared, append-only namespaces `research` and `review`.
    pub fn is_shared(&self) -> bool {
        SHARED_NAMESPACES.contains(&self.0.as_str())
    }

    /// The full notes ref of this namespace: `refs/notes/squad/<name>`.
    pub fn notes_ref(&self) -> String {
        format!("{NOTES_REF_PREFIX}{}", self.0)
    }

    /// The namespace of a full notes ref, if it is a squad notes ref with a valid name.
    ///
    /// ```
    /// use squad_model::AgentName;
    /// assert_eq!(AgentName::from_notes_ref("refs/notes/squad/worf").unwrap().as_str(), "worf");
    /// assert!(AgentName::from_notes_ref("refs/notes/commits").is_none());
    /// ```
    pub fn from_notes_ref(full_ref: &str) -> Option<Self> {
        full_ref
            .strip_prefix(NOTES_REF_PREFIX)
            .and_then(|n| Self::new(n).ok())
    }

    /// May the agent `self` write into namespace `namespace`?
    ///
    /// An agent writes its own namespace and the shared ones, nothing else.
    pub fn may_write(&self, namespace: &AgentName) -> bool {
        namespace == self || namespace.is_shared()
    }

    /// Unwraps the inner string.
    pub fn into_string(self) -> String {
        self.0
    }
}

fn check(name: &str) -> std::result::Result<(), &'static str> {
    if name.is_empty() {
        return Err("must not be empty");
    }
    if name.len() > MAX_AGENT_NAME_LEN {
        return Err("must be at most 64 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
    {
        return Err("only lowercase a-z, 0-9, '-' and '_' are allowed");
    }
    Ok(())
}

impl fmt::Display for AgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for AgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl FromStr for AgentName {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::new(s)
    }
}

impl AsRef<str> for AgentName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Serialize for AgentName {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for AgentName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::new(s).map_err(serde::de::Error::custom)
    }
}
