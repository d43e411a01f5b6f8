//! The one place that decides what a batch of [`StateEdit`]s means, shared by every store so that
//! they all behave alike: edits apply in order, a key is a value or a directory but never both,
//! appends build on the value the batch sees at that point.

use std::collections::BTreeMap;

use super::{StateEdit, validate_key};
use crate::{Error, ErrorKind, Result};

/// Read access to the state a batch is applied to.
pub(crate) trait Base {
    /// The value of `key`, `None` when missing or a directory.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>>;
    /// Every key strictly below the directory `dir` (keys starting with `dir/`).
    fn keys_under(&self, dir: &str) -> Result<Vec<String>>;
}

/// The final value of every key the batch changes: `Some` to store, `None` to remove.
/// Keys whose final value equals their current one are left out, so an empty plan means "no change".
pub(crate) type Plan = BTreeMap<String, Option<Vec<u8>>>;

/// Validates every key of `edits`, then works out their combined effect on `base`.
pub(crate) fn plan(base: &dyn Base, edits: &[StateEdit]) -> Result<Plan> {
    for edit in edits {
        validate_key(edit.key())?;
    }
    let mut cache = Cache::new();
    let mut overlay: Plan = BTreeMap::new();

    for edit in edits {
        let key = edit.key();
        let new = match edit {
            StateEdit::Expect { value, .. } => {
                let current = match overlay.get(key) {
                    Some(v) => v.clone(),
                    None => base_get(base, &mut cache, key)?.clone(),
                };
                if current != *value {
                    return Err(Error::new(
                        ErrorKind::Conflict,
                        "state.apply",
                        format!("{key:?} changed since it was read: the batch was not applied"),
                    ));
                }
                continue;
            }
            StateEdit::Delete { .. } => None,
            StateEdit::Write { value, .. } => {
                check_storable(base, &mut cache, &overlay, key)?;
                Some(value.clone())
            }
            StateEdit::Append { bytes, .. } => {
                check_storable(base, &mut cache, &overlay, key)?;
                let mut current = match overlay.get(key) {
                    Some(v) => v.clone().unwrap_or_default(),
                    None => base_get(base, &mut cache, key)?.clone().unwrap_or_default(),
                };
                current.extend_from_slice(bytes);
                Some(current)
            }
        };
        overlay.insert(key.to_owned(), new);
    }

    let mut out = Plan::new();
    for (key, value) in overlay {
        if *base_get(base, &mut cache, &key)? != value {
            out.insert(key, value);
        }
    }
    Ok(out)
}

type Cache = BTreeMap<String, Option<Vec<u8>>>;

/// The value of `key` in `base`, read once per batch.
fn base_get<'c>(base: &dyn Base, cache: &'c mut Cache, key: &str) -> Result<&'c Option<Vec<u8>>> {
    if !cache.contains_key(key) {
        let value = base.get(key)?;
        cache.insert(key.to_owned(), value);
    }
    Ok(cache.get(key).unwrap_or(&None))
}

/// Refuses to store a value at `key` when an ancestor holds a value or `key` is a directory,
/// as seen after the edits already in `overlay`.
fn check_storable(base: &dyn Base, cache: &mut Cache, overlay: &Plan, key: &str) -> Result<()> {
    for (i, _) in key.match_indices('/') {
        let ancestor = &key[..i];
        let is_value = match overlay.get(ancestor) {
            Some(v) => v.is_some(),
            None => base_get(base, cache, ancestor)?.is_some(),
        };
        if is_value {
            return Err(conflict(format!(
                "cannot store {key:?}: {ancestor:?} holds a value, not a directory"
            )));
        }
    }
    let dir_prefix = format!("{key}/");
    let overlay_child = overlay
        .range(dir_prefix.clone()..)
        .take_while(|(k, _)| k.starts_with(&dir_prefix))
        .any(|(_, v)| v.is_some());
    let is_dir = overlay_child
        || base
            .keys_under(key)?
            .iter()
            .any(|k| !matches!(overlay.get(k), Some(None)));
    if is_dir {
        return Err(conflict(format!(
            "cannot store {key:?}: it is a directory of other keys"
        )));
    }
    Ok(())
}

fn conflict(message: String) -> Error {
    Error::new(ErrorKind::InvalidInput, "state.apply", message)
}
