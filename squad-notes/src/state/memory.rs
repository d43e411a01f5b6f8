//! The in-memory reference store.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use super::plan::{Base, plan};
use super::{StateEdit, StateStore, prefix_dir, validate_key};
use crate::Result;

/// A [`StateStore`] kept in memory: the reference implementation, for tests and for hosts that
/// do not want persistent state.
///
/// It follows the same key rules as the persistent stores. Cloning is not offered; share it with
/// an `Arc`.
///
/// ```
/// use squad_notes::state::{InMemoryStateStore, StateStore, StateStoreExt};
/// # fn main() -> squad_notes::Result<()> {
/// let store = InMemoryStateStore::new();
/// store.append("log/today", b"one\n")?;
/// store.append("log/today", b"two\n")?;
/// assert_eq!(store.read("log/today")?.as_deref(), Some(&b"one\ntwo\n"[..]));
/// # Ok(()) }
/// ```
#[derive(Debug, Default)]
pub struct InMemoryStateStore {
    map: Mutex<BTreeMap<String, Vec<u8>>>,
}

impl InMemoryStateStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Vec<u8>>> {
        // A panic while holding the lock cannot leave the map half-updated (updates are applied
        // after the plan succeeded, with infallible map operations), so poisoning is ignored.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct MapBase<'a>(&'a BTreeMap<String, Vec<u8>>);

impl Base for MapBase<'_> {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.0.get(key).cloned())
    }

    fn keys_under(&self, dir: &str) -> Result<Vec<String>> {
        let prefix = format!("{dir}/");
        Ok(self
            .0
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k.clone())
            .collect())
    }
}

impl StateStore for InMemoryStateStore {
    fn read(&self, key: &str) -> Result<Option<Vec<u8>>> {
        validate_key(key)?;
        Ok(self.lock().get(key).cloned())
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        prefix_dir(prefix)?;
        Ok(self
            .lock()
            .range(prefix.to_owned()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect())
    }

    fn apply(&self, edits: &[StateEdit]) -> Result<()> {
        let mut map = self.lock();
        let plan = plan(&MapBase(&map), edits)?;
        for (key, value) in plan {
            match value {
                Some(v) => map.insert(key, v),
                None => map.remove(&key),
            };
        }
        Ok(())
    }
}
