//! Relative paths that stay inside the state root.

use std::ffi::OsStr;
use std::path::{Component, Path};

use crate::error::{Error, ErrorKind, Result};

/// A path relative to the state root made only of plain names: not empty, no `..`, no `.`, no
/// root or prefix, no NUL byte. Only such paths are ever opened below a [`crate::StateDir`].
///
/// ```
/// use squad_fs::RelPath;
/// assert!(RelPath::new("memory/hot/data.md").is_ok());
/// for bad in ["", "/etc/passwd", "../x", "memory/../../x", "./x", "a/./b"] {
///     assert!(RelPath::new(bad).is_err(), "{bad}");
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RelPath<'a> {
    path: &'a Path,
}

impl<'a> RelPath<'a> {
    /// Checks `path`.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidPath`] naming the path.
    pub fn new(path: &'a (impl AsRef<Path> + ?Sized)) -> Result<Self> {
        let path = path.as_ref();
        let bad = || Error::new(ErrorKind::InvalidPath, "resolve", path);
        if path.as_os_str().is_empty() || path.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(bad());
        }
        // `Path::components` folds `a/./b` into `a/b`; refuse a `.` anywhere explicitly.
        if path
            .as_os_str()
            .as_encoded_bytes()
            .split(|b| *b == b'/' || *b == b'\\')
            .any(|part| part == b"." || part == b"..")
        {
            return Err(bad());
        }
        if !path.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(bad());
        }
        Ok(Self { path })
    }

    /// The path.
    pub fn as_path(&self) -> &'a Path {
        self.path
    }

    /// Its plain components, in order.
    pub(crate) fn components(&self) -> Vec<&'a OsStr> {
        self.path
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n),
                _ => None,
            })
            .collect()
    }
}

impl AsRef<Path> for RelPath<'_> {
    fn as_ref(&self) -> &Path {
        self.path
    }
}
