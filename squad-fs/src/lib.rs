#![doc = include_str!("../README.md")]

mod error;
mod path;

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsMaybeDirExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

pub use crate::error::{Error, ErrorKind, Result};
pub use crate::path::RelPath;

/// What a name below the state root is, seen without following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link: never followed.
    Symlink,
    /// Anything else (a socket, a FIFO, a device).
    Other,
}

/// One name in a directory listing ([`StateDir::list`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The file name (lossily converted when it is not UTF-8).
    pub name: String,
    /// What it is, not following symlinks.
    pub kind: EntryKind,
}

/// A symlink (or other special file) found below the state root by [`StateDir::audit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Its path relative to the root.
    pub path: PathBuf,
    /// What it is.
    pub kind: EntryKind,
    /// Where a symlink points (as stored in the link), when readable.
    pub target: Option<PathBuf>,
}

/// A temporary file left by a writer that did not finish ([`StateDir::leftover_temp_files`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TempFile {
    /// Its path relative to the root.
    pub path: PathBuf,
    /// The process id of the writer that created it.
    pub pid: u32,
    /// Whether that process is still running (Linux: `/proc/<pid>` exists; elsewhere assumed
    /// running unless the file is more than an hour old).
    pub writer_alive: bool,
}

/// A held advisory lock; released when dropped (or when the process exits).
#[derive(Debug)]
pub struct Lock {
    file: std::fs::File,
    path: PathBuf,
}

impl Lock {
    /// The lock file's path relative to the state root.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = fs4::fs_std::FileExt::unlock(&self.file);
    }
}

/// The marker in temporary file names: `.<name>.tmp-<pid>-<n>`.
const TEMP_MARKER: &str = ".tmp-";

/// A squad state directory. Cheap to create and clone; every operation opens the root anew,
/// so the directory may be created, replaced or removed between calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// A state directory at `root` (which need not exist yet: writers create it).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root path, as given.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The full path of `rel` below the root (for messages; never opened by path).
    pub fn display_path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    /// Whether the root exists and is a directory (following a symlink at the root itself).
    pub fn exists(&self) -> bool {
        self.root.is_dir()
    }

    /// Reads a whole file. `Ok(None)` when it (or a directory on its way) does not exist.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidPath`] for a path that is not plain and relative,
    /// [`ErrorKind::Symlink`] when the file or a directory on its way is a symlink,
    /// [`ErrorKind::Io`] otherwise.
    pub fn read(&self, rel: impl AsRef<Path>) -> Result<Option<Vec<u8>>> {
        self.read_capped(rel, u64::MAX)
    }

    /// Reads a whole file, refusing one larger than `max_bytes` with [`ErrorKind::TooLarge`]
    /// before reading it.
    ///
    /// # Errors
    /// As [`StateDir::read`], plus [`ErrorKind::TooLarge`].
    pub fn read_capped(&self, rel: impl AsRef<Path>, max_bytes: u64) -> Result<Option<Vec<u8>>> {
        let rel = rel.as_ref();
        let Some((file, len)) = self.open_capped(rel, max_bytes)? else {
            return Ok(None);
        };
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        // Read through the standard library's file, which reads into the vector's spare room
        // as it is (cap-std's would zero it first: a memset of the whole file).
        let mut file = file;
        (&mut file)
            .take(max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("read", self.display_path(rel), e))?;
        if bytes.len() as u64 > max_bytes {
            return Err(
                Error::new(ErrorKind::TooLarge, "read", self.display_path(rel))
                    .with_detail(format!("grew past the limit of {max_bytes} bytes")),
            );
        }
        Ok(Some(bytes))
    }

    /// Opens a file for reading, with the checks of [`StateDir::read_capped`] (no symlink
    /// followed, a regular file, at most `max_bytes` long when opened), for a reader that
    /// reads it in parts: the open file and its length. `Ok(None)` when it (or a directory on
    /// its way) does not exist.
    ///
    /// The file may still change after it is opened (a writer that replaces it atomically
    /// leaves the open file as it was; one that writes in place does not): a reader that
    /// needs one version checks what it read.
    ///
    /// ```
    /// # fn main() -> squad_fs::Result<()> {
    /// use std::io::Read;
    /// let dir = tempfile::tempdir().map_err(|e| squad_fs::Error::io("tempdir", "", e))?;
    /// let state = squad_fs::StateDir::new(dir.path());
    /// state.write_atomic("memory/cold/data.md", b"hello")?;
    /// let (mut file, len) = state.open_capped("memory/cold/data.md", 1024)?.expect("present");
    /// let mut text = String::new();
    /// file.read_to_string(&mut text).map_err(|e| squad_fs::Error::io("read", "", e))?;
    /// assert_eq!((text.as_str(), len), ("hello", 5));
    /// assert!(state.open_capped("memory/cold/data.md", 4).is_err());
    /// assert!(state.open_capped("memory/cold/none.md", 4)?.is_none());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`StateDir::read_capped`].
    pub fn open_capped(
        &self,
        rel: impl AsRef<Path>,
        max_bytes: u64,
    ) -> Result<Option<(std::fs::File, u64)>> {
        let rel = RelPath::new(rel.as_ref())?;
        let Some(root) = self.open_root(false)? else {
            return Ok(None);
        };
        let Some((dir, name)) = self.walk(&root, &rel, false)? else {
            return Ok(None);
        };
        // Look before opening: opening a FIFO for reading would block until a writer comes.
        match dir.symlink_metadata(name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Ok(m) if m.file_type().is_symlink() => {
                return Err(self.symlink_error(&dir, name, &rel, "read"));
            }
            Ok(m) if !m.is_file() => {
                return Err(Error::new(
                    ErrorKind::NotAFile,
                    "read",
                    self.display_path(&rel),
                ));
            }
            _ => {}
        }
        let mut opts = OpenOptions::new();
        opts.read(true).follow(FollowSymlinks::No);
        let file = match dir.open_with(name, &opts) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.classify(&dir, name, &rel, "read", e)),
        };
        let meta = file
            .metadata()
            .map_err(|e| Error::io("read", self.display_path(&rel), e))?;
        if !meta.is_file() {
            return Err(Error::new(
                ErrorKind::NotAFile,
                "read",
                self.display_path(&rel),
            ));
        }
        if meta.len() > max_bytes {
            return Err(
                Error::new(ErrorKind::TooLarge, "read", self.display_path(&rel))
                    .with_detail(format!("{} bytes, the limit is {max_bytes}", meta.len())),
            );
        }
        Ok(Some((file.into_std(), meta.len())))
    }

    /// Reads a whole file as UTF-8 text.
    ///
    /// # Errors
    /// As [`StateDir::read`], plus [`ErrorKind::NotUtf8`] naming the first bad line.
    pub fn read_to_string(&self, rel: impl AsRef<Path>) -> Result<Option<String>> {
        let rel = rel.as_ref();
        match self.read(rel)? {
            None => Ok(None),
            Some(bytes) => String::from_utf8(bytes).map(Some).map_err(|e| {
                let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
                    .iter()
                    .filter(|b| **b == b'\n')
                    .count();
                Error::new(ErrorKind::NotUtf8, "read", self.display_path(rel))
                    .with_line(line)
                    .with_detail("not valid UTF-8")
            }),
        }
    }

    /// Replaces a file atomically with `bytes`, creating the root and the directories on the
    /// way: a temporary file in the same directory, fsynced, renamed over the target, then the
    /// directory fsynced. A reader sees the old or the new bytes, never a mix.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidPath`], [`ErrorKind::Symlink`] (the target or a directory on the
    /// way is a symlink: nothing is written), [`ErrorKind::Io`].
    pub fn write_atomic(&self, rel: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
        let rel = RelPath::new(rel.as_ref())?;
        let root = self.require_root()?;
        let (dir, name) = self.walk_create(&root, &rel)?;
        // Refuse to replace a symlink: renaming over it would be harmless, but it says someone
        // put a link here, which the caller must hear about.
        self.refuse_symlink(&dir, name, &rel, "write")?;
        let tmp = temp_name(name);
        let result = (|| -> io::Result<()> {
            let mut opts = OpenOptions::new();
            opts.write(true).create_new(true).follow(FollowSymlinks::No);
            let mut f = dir.open_with(&tmp, &opts)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            drop(f);
            dir.rename(&tmp, &dir, name)?;
            sync_dir(&dir)
        })();
        result.map_err(|e| {
            let _ = dir.remove_file(&tmp);
            Error::io("write", self.display_path(&rel), e)
        })
    }

    /// Appends `bytes` to a file in one `O_APPEND` write (creating it and the directories on
    /// the way), then fsyncs it.
    ///
    /// # Errors
    /// As [`StateDir::write_atomic`].
    pub fn append(&self, rel: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
        self.append_with(rel.as_ref(), bytes, true)
    }

    /// [`StateDir::append`] without the fsync, for a file whose loss in a crash does not matter
    /// (a lock ticket that dies with its process anyway).
    ///
    /// # Errors
    /// As [`StateDir::append`].
    pub fn append_unsynced(&self, rel: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
        self.append_with(rel.as_ref(), bytes, false)
    }

    fn append_with(&self, rel: &Path, bytes: &[u8], sync: bool) -> Result<()> {
        let rel = RelPath::new(rel)?;
        let root = self.require_root()?;
        let (dir, name) = self.walk_create(&root, &rel)?;
        let mut opts = OpenOptions::new();
        opts.append(true).create(true).follow(FollowSymlinks::No);
        let mut f = dir
            .open_with(name, &opts)
            .map_err(|e| self.classify(&dir, name, &rel, "append", e))?;
        f.write_all(bytes)
            .and_then(|()| if sync { f.sync_data() } else { Ok(()) })
            .map_err(|e| Error::io("append", self.display_path(&rel), e))
    }

    /// Removes a file. `Ok(false)` when it did not exist. A symlink is removed as a link (its
    /// target is never touched).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidPath`], [`ErrorKind::Symlink`] for a symlinked directory on the
    /// way, [`ErrorKind::Io`].
    pub fn remove(&self, rel: impl AsRef<Path>) -> Result<bool> {
        self.remove_with(rel.as_ref(), true)
    }

    /// [`StateDir::remove`] without syncing the directory, for a file whose return after a
    /// crash does not matter (a lock ticket, which a crash leaves dead anyway).
    ///
    /// # Errors
    /// As [`StateDir::remove`].
    pub fn remove_unsynced(&self, rel: impl AsRef<Path>) -> Result<bool> {
        self.remove_with(rel.as_ref(), false)
    }

    fn remove_with(&self, rel: &Path, sync: bool) -> Result<bool> {
        let rel = RelPath::new(rel)?;
        let Some(root) = self.open_root(false)? else {
            return Ok(false);
        };
        let Some((dir, name)) = self.walk(&root, &rel, false)? else {
            return Ok(false);
        };
        match dir.remove_file(name) {
            Ok(()) => {
                if sync {
                    let _ = sync_dir(&dir);
                }
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io("remove", self.display_path(&rel), e)),
        }
    }

    /// What `rel` is, without following a symlink; `None` when it does not exist.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidPath`], [`ErrorKind::Symlink`] for a symlinked directory on the
    /// way, [`ErrorKind::Io`].
    pub fn kind(&self, rel: impl AsRef<Path>) -> Result<Option<EntryKind>> {
        let rel = RelPath::new(rel.as_ref())?;
        let Some(root) = self.open_root(false)? else {
            return Ok(None);
        };
        let Some((dir, name)) = self.walk(&root, &rel, false)? else {
            return Ok(None);
        };
        self.kind_in(&dir, name, rel.as_path())
    }

    /// The names in a directory below the root (`""` or `"."` is not allowed: pass a
    /// directory path; use [`StateDir::list_root`] for the root), sorted by name, each with
    /// its kind seen without following symlinks. Empty when the directory does not exist.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidPath`], [`ErrorKind::Symlink`] when the directory or one on its way
    /// is a symlink, [`ErrorKind::Io`].
    pub fn list(&self, rel_dir: impl AsRef<Path>) -> Result<Vec<DirEntry>> {
        let rel = RelPath::new(rel_dir.as_ref())?;
        let Some(root) = self.open_root(false)? else {
            return Ok(Vec::new());
        };
        let Some((parent, name)) = self.walk(&root, &rel, false)? else {
            return Ok(Vec::new());
        };
        match self.open_dir_nofollow(&parent, name, &rel)? {
            Some(dir) => self.entries(&dir, rel.as_path()),
            None => Ok(Vec::new()),
        }
    }

    /// The names directly in the root (see [`StateDir::list`]).
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when the root cannot be read.
    pub fn list_root(&self) -> Result<Vec<DirEntry>> {
        match self.open_root(false)? {
            Some(root) => self.entries(&root, Path::new("")),
            None => Ok(Vec::new()),
        }
    }

    /// Takes the exclusive advisory lock on `rel` (a lock file, created when missing), waiting
    /// for another holder to release it. The lock dies with its process.
    ///
    /// # Errors
    /// As [`StateDir::append`].
    pub fn lock(&self, rel: impl AsRef<Path>) -> Result<Lock> {
        let (file, rel) = self.open_lock_file(rel.as_ref())?;
        fs4::fs_std::FileExt::lock_exclusive(&file)
            .map_err(|e| Error::io("lock", self.display_path(&rel), e))?;
        Ok(Lock {
            file,
            path: rel.as_path().to_path_buf(),
        })
    }

    /// Takes the exclusive advisory lock on `rel` if no one holds it; `Ok(None)` when another
    /// process (or another handle in this one) holds it.
    ///
    /// # Errors
    /// As [`StateDir::append`].
    pub fn try_lock(&self, rel: impl AsRef<Path>) -> Result<Option<Lock>> {
        let (file, rel) = self.open_lock_file(rel.as_ref())?;
        match fs4::fs_std::FileExt::try_lock_exclusive(&file) {
            Ok(true) => Ok(Some(Lock {
                file,
                path: rel.as_path().to_path_buf(),
            })),
            Ok(false) => Ok(None),
            Err(e) => Err(Error::io("lock", self.display_path(&rel), e)),
        }
    }

    /// Every symlink and special file below the root (not following any), depth first, sorted.
    /// A clean state directory has none; callers report each as a problem.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when a directory cannot be read.
    pub fn audit(&self) -> Result<Vec<Finding>> {
        let mut found = Vec::new();
        self.walk_from(Path::new(""), &mut |dir, ent, path| {
            if matches!(ent.kind, EntryKind::Symlink | EntryKind::Other) {
                let target = dir.read_link_contents(&ent.name).ok();
                found.push(Finding {
                    path,
                    kind: ent.kind,
                    target,
                });
            }
        })?;
        Ok(found)
    }

    /// Temporary files left below the root by writers that did not finish, with whether their
    /// writer still runs. Only files named as [`StateDir::write_atomic`] names them are listed.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when a directory cannot be read.
    pub fn leftover_temp_files(&self) -> Result<Vec<TempFile>> {
        self.temp_files_below(Path::new(""))
    }

    /// Removes the temporary files below `rel_dir` (`""` for the whole directory) whose writer
    /// no longer runs (see [`StateDir::leftover_temp_files`]) and returns their paths, relative
    /// to the root. A writer killed between creating its temporary file and renaming it leaves
    /// one behind; the next writer of the same files calls this, holding the lock they all
    /// take, so that nothing a crash leaves lasts beyond the next command.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidPath`] for a bad `rel_dir`; [`ErrorKind::Io`] when a directory
    /// cannot be read or a file removed.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let state = squad_fs::StateDir::new(dir.path());
    /// // What a writer killed mid-write (a process id no system hands out) left behind:
    /// state.write_atomic("memory/hot/.data.md.tmp-999999999-0", b"half")?;
    /// let removed = state.remove_dead_temp_files("memory")?;
    /// assert_eq!(removed, [std::path::Path::new("memory/hot/.data.md.tmp-999999999-0")]);
    /// assert!(state.leftover_temp_files()?.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn remove_dead_temp_files(&self, rel_dir: impl AsRef<Path>) -> Result<Vec<PathBuf>> {
        let mut removed = Vec::new();
        for temp in self.temp_files_below(rel_dir.as_ref())? {
            if !temp.writer_alive && self.remove(&temp.path)? {
                removed.push(temp.path);
            }
        }
        Ok(removed)
    }

    // ---- internals -------------------------------------------------------------------------

    fn open_root(&self, create: bool) -> Result<Option<Dir>> {
        if create {
            std::fs::create_dir_all(&self.root)
                .map_err(|e| Error::io("create", self.root.clone(), e))?;
        }
        match Dir::open_ambient_dir(&self.root, ambient_authority()) {
            Ok(d) => Ok(Some(d)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("open", self.root.clone(), e)),
        }
    }

    fn require_root(&self) -> Result<Dir> {
        self.open_root(true)?
            .ok_or_else(|| Error::new(ErrorKind::Io, "open", self.root.clone()))
    }

    /// Opens the directories of `rel` but its last component, never following a symlink.
    /// `None` when one does not exist.
    fn walk<'a>(
        &self,
        root: &Dir,
        rel: &'a RelPath<'a>,
        create: bool,
    ) -> Result<Option<(Dir, &'a OsStr)>> {
        let mut components = rel.components();
        let last = components
            .pop()
            .ok_or_else(|| Error::new(ErrorKind::InvalidPath, "resolve", self.display_path(rel)))?;
        let mut dir = root
            .try_clone()
            .map_err(|e| Error::io("open", self.root.clone(), e))?;
        let mut so_far = PathBuf::new();
        for comp in components {
            so_far.push(comp);
            if create {
                match dir.create_dir(comp) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(Error::io("create", self.display_path(&so_far), e)),
                }
            }
            let sub = RelPath::new(&so_far)?;
            match self.open_dir_nofollow(&dir, comp, &sub)? {
                Some(next) => dir = next,
                None => return Ok(None),
            }
        }
        Ok(Some((dir, last)))
    }

    fn walk_create<'a>(&self, root: &Dir, rel: &'a RelPath<'a>) -> Result<(Dir, &'a OsStr)> {
        self.walk(root, rel, true)?
            .ok_or_else(|| Error::new(ErrorKind::Io, "create", self.display_path(rel)))
    }

    /// Opens a directory without following a symlink; `None` when it does not exist.
    fn open_dir_nofollow(
        &self,
        parent: &Dir,
        name: &OsStr,
        rel: &RelPath<'_>,
    ) -> Result<Option<Dir>> {
        let mut opts = OpenOptions::new();
        opts.read(true).follow(FollowSymlinks::No).maybe_dir(true);
        let file = match parent.open_with(name, &opts) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.classify(parent, name, rel, "open", e)),
        };
        let is_dir = file
            .metadata()
            .map_err(|e| Error::io("open", self.display_path(rel), e))?
            .is_dir();
        if !is_dir {
            return Err(Error::new(
                ErrorKind::NotADirectory,
                "open",
                self.display_path(rel),
            ));
        }
        Ok(Some(Dir::from_std_file(file.into_std())))
    }

    /// Turns an open failure into [`ErrorKind::Symlink`] when the name is a symlink.
    fn classify(
        &self,
        dir: &Dir,
        name: &OsStr,
        rel: &RelPath<'_>,
        op: &'static str,
        e: io::Error,
    ) -> Error {
        match dir.symlink_metadata(name) {
            Ok(m) if m.file_type().is_symlink() => self.symlink_error(dir, name, rel, op),
            _ => Error::io(op, self.display_path(rel), e),
        }
    }

    fn refuse_symlink(
        &self,
        dir: &Dir,
        name: &OsStr,
        rel: &RelPath<'_>,
        op: &'static str,
    ) -> Result<()> {
        match dir.symlink_metadata(name) {
            Ok(m) if m.file_type().is_symlink() => Err(self.symlink_error(dir, name, rel, op)),
            Ok(m) if m.is_dir() => Err(Error::new(ErrorKind::NotAFile, op, self.display_path(rel))),
            _ => Ok(()),
        }
    }

    fn symlink_error(&self, dir: &Dir, name: &OsStr, rel: &RelPath<'_>, op: &'static str) -> Error {
        let err = Error::new(ErrorKind::Symlink, op, self.display_path(rel));
        match dir.read_link_contents(name) {
            Ok(target) => err.with_detail(format!("points to {}", target.display())),
            Err(_) => err,
        }
    }

    fn open_lock_file<'a>(&self, rel: &'a Path) -> Result<(std::fs::File, RelPath<'a>)> {
        let rel = RelPath::new(rel)?;
        let root = self.require_root()?;
        let (dir, name) = self.walk_create(&root, &rel)?;
        let mut opts = OpenOptions::new();
        opts.read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .follow(FollowSymlinks::No);
        let file = dir
            .open_with(name, &opts)
            .map_err(|e| self.classify(&dir, name, &rel, "lock", e))?;
        Ok((file.into_std(), rel))
    }

    fn entries(&self, dir: &Dir, rel: &Path) -> Result<Vec<DirEntry>> {
        let rd = dir
            .entries()
            .map_err(|e| Error::io("list", self.display_path(rel), e))?;
        let mut out = Vec::new();
        for ent in rd {
            let ent = ent.map_err(|e| Error::io("list", self.display_path(rel), e))?;
            let kind = ent
                .file_type()
                .map(|t| kind_of(&t))
                .map_err(|e| Error::io("list", self.display_path(rel), e))?;
            out.push(DirEntry {
                name: ent.file_name().to_string_lossy().into_owned(),
                kind,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Calls `visit` with every entry at or below `rel` (`""` for the root) that is not a
    /// directory, exactly as a walk of the whole tree from the root ([`StateDir::walk_tree`])
    /// would reach them, without listing anything outside `rel`. Each name on the way is looked
    /// at before it is opened, and only a directory is entered: a name on the way that is
    /// missing, a symlink or not a directory (a FIFO is never opened) means nothing to visit.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidPath`] for a bad `rel`; [`ErrorKind::Io`] when a directory cannot
    /// be read.
    fn walk_from(
        &self,
        rel: &Path,
        visit: &mut impl FnMut(&Dir, &DirEntry, PathBuf),
    ) -> Result<()> {
        let names = if rel.as_os_str().is_empty() {
            Vec::new()
        } else {
            RelPath::new(rel)?.components()
        };
        let Some(mut dir) = self.open_root(false)? else {
            return Ok(());
        };
        let Some((last, on_the_way)) = names.split_last() else {
            return self.walk_tree(&dir, PathBuf::new(), 0, visit);
        };
        // `depth` counts the directories below the root, as in `walk_tree`: `dir` is at
        // depth `depth`, and the name looked at next is one of its entries.
        let mut path = PathBuf::new();
        for (depth, name) in on_the_way.iter().enumerate() {
            if depth > MAX_DEPTH {
                return Ok(());
            }
            path.push(name);
            if self.kind_in(&dir, name, &path)? != Some(EntryKind::Dir) {
                return Ok(());
            }
            match self.open_dir_nofollow(&dir, name, &RelPath::new(&path)?)? {
                Some(next) => dir = next,
                None => return Ok(()),
            }
        }
        let depth = on_the_way.len();
        if depth > MAX_DEPTH {
            return Ok(());
        }
        path.push(last);
        let Some(kind) = self.kind_in(&dir, last, &path)? else {
            return Ok(());
        };
        let ent = DirEntry {
            name: last.to_string_lossy().into_owned(),
            kind,
        };
        self.walk_entry(&dir, &ent, path, depth, visit)
    }

    /// What `name` in `dir` (the path `rel` below the root) is, not following a symlink;
    /// `None` when it does not exist.
    fn kind_in(&self, dir: &Dir, name: &OsStr, rel: &Path) -> Result<Option<EntryKind>> {
        match dir.symlink_metadata(name) {
            Ok(m) => Ok(Some(kind_of(&m.file_type()))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("stat", self.display_path(rel), e)),
        }
    }

    /// Calls `visit` with every entry below `dir` (named `rel`, at depth `depth` below the
    /// root) that is not a directory, descending into directories without following a link,
    /// at most [`MAX_DEPTH`] deep.
    fn walk_tree(
        &self,
        dir: &Dir,
        rel: PathBuf,
        depth: usize,
        visit: &mut impl FnMut(&Dir, &DirEntry, PathBuf),
    ) -> Result<()> {
        if depth > MAX_DEPTH {
            return Ok(());
        }
        for ent in self.entries(dir, &rel)? {
            let path = rel.join(&ent.name);
            self.walk_entry(dir, &ent, path, depth, visit)?;
        }
        Ok(())
    }

    /// One entry of `dir` (at depth `depth`) met by [`StateDir::walk_tree`], at `path`: a
    /// directory is walked (never through a link), anything else is visited.
    fn walk_entry(
        &self,
        dir: &Dir,
        ent: &DirEntry,
        path: PathBuf,
        depth: usize,
        visit: &mut impl FnMut(&Dir, &DirEntry, PathBuf),
    ) -> Result<()> {
        if ent.kind == EntryKind::Dir {
            let sub = RelPath::new(&path)?;
            if let Some(d) = self.open_dir_nofollow(dir, OsStr::new(&ent.name), &sub)? {
                self.walk_tree(&d, path, depth + 1, visit)?;
            }
        } else {
            visit(dir, ent, path);
        }
        Ok(())
    }

    /// The temporary files of writers at or below `rel_dir` (`""` for the root), see
    /// [`StateDir::leftover_temp_files`].
    fn temp_files_below(&self, rel_dir: &Path) -> Result<Vec<TempFile>> {
        let mut found = Vec::new();
        self.walk_from(rel_dir, &mut |dir, ent, path| {
            if ent.kind != EntryKind::File {
                return;
            }
            if let Some(pid) = temp_file_pid(&ent.name) {
                let modified = dir
                    .symlink_metadata(&ent.name)
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .map(cap_std::time::SystemTime::into_std);
                found.push(TempFile {
                    path,
                    pid,
                    writer_alive: process_alive(pid, modified),
                });
            }
        })?;
        Ok(found)
    }
}

/// How deep [`StateDir::audit`] and [`StateDir::leftover_temp_files`] descend.
const MAX_DEPTH: usize = 32;

fn kind_of(t: &cap_std::fs::FileType) -> EntryKind {
    if t.is_symlink() {
        EntryKind::Symlink
    } else if t.is_dir() {
        EntryKind::Dir
    } else if t.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other
    }
}

/// `.<name>.tmp-<pid>-<n>`: unique per process and call.
fn temp_name(name: &OsStr) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(
        ".{}{TEMP_MARKER}{}-{n}",
        name.to_string_lossy(),
        std::process::id()
    )
}

/// The writer's process id, when `name` is one of our temporary file names.
pub fn temp_file_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?;
    let (_, tail) = rest.rsplit_once(TEMP_MARKER)?;
    let (pid, n) = tail.split_once('-')?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

fn process_alive(pid: u32, modified: Option<SystemTime>) -> bool {
    if pid == std::process::id() {
        return true;
    }
    if Path::new("/proc/self").exists() {
        return Path::new("/proc").join(pid.to_string()).exists();
    }
    // Without /proc, a temporary file younger than an hour may belong to a running writer.
    modified
        .and_then(|m| m.elapsed().ok())
        .is_none_or(|age| age.as_secs() < 3600)
}

fn sync_dir(dir: &Dir) -> io::Result<()> {
    // Directories cannot be opened for syncing everywhere; where they cannot, the rename is
    // still atomic, only its durability is left to the file system.
    match dir.open(".") {
        Ok(d) => d.sync_all().or(Ok(())),
        Err(_) => Ok(()),
    }
}
