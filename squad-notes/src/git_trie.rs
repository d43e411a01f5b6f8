//! git's own in-memory notes tree, rebuilt so that a write gives the tree `git notes add` gives.
//!
//! git keeps a notes tree as a 16-way trie over the nibbles of the annotated object's id. The
//! fanout directories of the tree on disk are loaded lazily: a directory `ab/` sits in the trie
//! as a *subtree leaf* until a search or an insert passes through it, and is then loaded into
//! the trie at the level where it sat. Loading inserts every entry found; an entry for an object
//! that already has a note is folded into it (same blob: kept once; different blobs: joined as
//! `combine_notes_concatenate` joins them, a new blob). Writing walks the trie, choosing the
//! fanout per trie node (one more directory level when all 16 slots of an even level hold
//! several notes or unloaded directories), writes unloaded directories back as they were and
//! loads those that sit deeper than the fanout chosen.
//!
//! So a tree holding one object's note at two depths (a flat entry and one under `xx/`, which
//! libgit2 writers and `git fast-import` produce) comes out of a write with the duplicates
//! folded exactly where git folds them, and the result is byte for byte the tree git writes:
//! same entries, same order, same ids.

use gix::objs::{Find, Write};

use crate::error::{Error, ErrorKind, Result};

const OP: &str = "notes.update";

/// A leaf of the trie: a note (full key) or an unloaded fanout directory (key = the prefix
/// bytes, zero padded, with the prefix length in its last byte, as git keys it).
#[derive(Clone, Copy)]
struct Leaf {
    key: [u8; 32],
    val: gix::ObjectId,
}

enum Slot {
    Empty,
    Internal(Box<Node>),
    Note(Leaf),
    Subtree(Leaf),
}

struct Node {
    a: [Slot; 16],
}

impl Node {
    fn new() -> Box<Self> {
        Box::new(Self {
            a: std::array::from_fn(|_| Slot::Empty),
        })
    }
}

/// A non-note entry: its full path from the root, its mode and its id.
struct NonNote {
    mode: u16,
    id: gix::ObjectId,
}

/// The notes tree of one write, loaded lazily from the object database `odb`.
pub(crate) struct Trie<'o, O> {
    odb: &'o O,
    hash: gix::hash::Kind,
    root: Box<Node>,
    /// Non-note entries by full path (git keeps them sorted by `strcmp`, a later one with the
    /// same path replacing the earlier).
    non_notes: std::collections::BTreeMap<Vec<u8>, NonNote>,
    buf: Vec<u8>,
}

fn nibble(n: usize, key: &[u8]) -> usize {
    let byte = key[n >> 1];
    usize::from(if n.is_multiple_of(2) {
        byte >> 4
    } else {
        byte & 0x0f
    })
}

fn corrupt(id: gix::ObjectId, what: &str) -> Error {
    Error::new(
        ErrorKind::Corrupt,
        OP,
        format!("notes tree {id} cannot be read: {what}"),
    )
}

fn hex_byte(pair: &[u8]) -> Option<u8> {
    let digit = |c: u8| (c as char).to_digit(16);
    Some(u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).unwrap_or(0))
}

impl<'o, O: Find + Write> Trie<'o, O> {
    /// The tree `root` as git holds it right after reading the ref: the root directory loaded,
    /// its fanout directories not.
    pub(crate) fn open(odb: &'o O, hash: gix::hash::Kind, root: gix::ObjectId) -> Result<Self> {
        let mut trie = Self {
            odb,
            hash,
            root: Node::new(),
            non_notes: std::collections::BTreeMap::new(),
            buf: Vec::new(),
        };
        let top = Leaf {
            key: [0; 32],
            val: root,
        };
        let mut node = std::mem::replace(&mut trie.root, Node::new());
        trie.load(&top, &mut node, 0)?;
        trie.root = node;
        Ok(trie)
    }

    fn len(&self) -> usize {
        self.hash.len_in_bytes()
    }

    fn key_index(&self) -> usize {
        self.len() - 1
    }

    /// Does `key` start with the prefix of subtree leaf `sub`?
    fn in_subtree(&self, key: &[u8; 32], sub: &Leaf) -> bool {
        let plen = usize::from(sub.key[self.key_index()]);
        key[..plen] == sub.key[..plen]
    }

    /// Sets the note of `object` to `blob` (git's `add_note` with `combine_notes_overwrite`),
    /// or removes it (`remove_note`) when `blob` is `None`.
    pub(crate) fn edit(&mut self, object: &gix::oid, blob: Option<gix::ObjectId>) -> Result<()> {
        let mut key = [0u8; 32];
        key[..self.len()].copy_from_slice(object.as_bytes());
        let mut root = std::mem::replace(&mut self.root, Node::new());
        let done = match blob {
            Some(val) => self.insert(&mut root, 0, Leaf { key, val }, false, true),
            None => self.remove(&mut root, 0, &key).map(|_| ()),
        };
        self.root = root;
        done
    }

    /// Loads the directory of `sub` into `node` at trie level `n`.
    fn load(&mut self, sub: &Leaf, node: &mut Node, n: usize) -> Result<()> {
        let len = self.len();
        let plen = usize::from(sub.key[self.key_index()]);
        let mut buf = std::mem::take(&mut self.buf);
        let data = self
            .odb
            .try_find(&sub.val, &mut buf)
            .map_err(|e| corrupt(sub.val, "not readable").with_source(e))?
            .ok_or_else(|| corrupt(sub.val, "missing"))?;
        if data.kind != gix::object::Kind::Tree {
            return Err(corrupt(sub.val, "not a tree"));
        }
        let mut entries = Vec::new();
        for entry in gix::objs::TreeRefIter::from_bytes(data.data, self.hash) {
            let entry = entry.map_err(|e| corrupt(sub.val, "malformed").with_source(e))?;
            entries.push((entry.filename.to_vec(), entry.mode, entry.oid.to_owned()));
        }
        self.buf = buf;
        for (name, mode, id) in entries {
            let mut key = sub.key;
            key[self.key_index()] = 0;
            let is_note = name.len() == 2 * (len - plen)
                && mode.is_blob()
                && name
                    .chunks(2)
                    .zip(plen..)
                    .all(|(pair, at)| hex_byte(pair).map(|b| key[at] = b).is_some());
            if is_note {
                self.insert(node, n, Leaf { key, val: id }, false, false)?;
                continue;
            }
            if name.len() == 2
                && mode.is_tree()
                && let Some(b) = hex_byte(&name)
            {
                key[plen] = b;
                key[plen + 1..len].fill(0);
                key[self.key_index()] = u8::try_from(plen + 1).unwrap_or(u8::MAX);
                self.insert(node, n, Leaf { key, val: id }, true, false)?;
                continue;
            }
            // A non-note: its path is the hex pairs of the prefix, then its own name.
            let mut path = Vec::with_capacity(plen * 3 + name.len());
            for b in &sub.key[..plen] {
                path.extend_from_slice(format!("{b:02x}/").as_bytes());
            }
            path.extend_from_slice(&name);
            self.non_notes.insert(
                path,
                NonNote {
                    mode: mode.value(),
                    id,
                },
            );
        }
        Ok(())
    }

    /// git's `note_tree_insert` (with the search of `note_tree_search` folded in): `subtree`
    /// says what `entry` is; `overwrite` picks `combine_notes_overwrite` over
    /// `combine_notes_concatenate`.
    fn insert(
        &mut self,
        node: &mut Node,
        n: usize,
        entry: Leaf,
        subtree: bool,
        overwrite: bool,
    ) -> Result<()> {
        if n >= 2 * self.len() {
            return Err(Error::new(
                ErrorKind::Corrupt,
                OP,
                "the notes tree nests deeper than an object id",
            ));
        }
        // A subtree leaf pushed down to slot 0 (its padding) whose prefix matches: load it.
        if let Slot::Subtree(l) = &node.a[0]
            && self.in_subtree(&entry.key, l)
        {
            let l = *l;
            node.a[0] = Slot::Empty;
            self.load(&l, node, n)?;
            return self.insert(node, n, entry, subtree, overwrite);
        }
        let i = nibble(n, &entry.key);
        match &mut node.a[i] {
            Slot::Internal(child) => {
                return self.insert(child, n + 1, entry, subtree, overwrite);
            }
            Slot::Subtree(l) if self.in_subtree(&entry.key, l) => {
                let l = *l;
                node.a[i] = Slot::Empty;
                self.load(&l, node, n)?;
                return self.insert(node, n, entry, subtree, overwrite);
            }
            Slot::Empty => {
                node.a[i] = if subtree {
                    Slot::Subtree(entry)
                } else {
                    Slot::Note(entry)
                };
                return Ok(());
            }
            Slot::Note(l) if !subtree && l.key == entry.key => {
                if l.val != entry.val {
                    l.val = if overwrite {
                        entry.val
                    } else {
                        self.concatenate(l.val, entry.val)?
                    };
                }
                return Ok(());
            }
            Slot::Note(l) if subtree && self.in_subtree(&l.key, &entry) => {
                return self.load(&entry, node, n);
            }
            Slot::Note(_) | Slot::Subtree(_) => {}
        }
        // Two different leaves in one slot: a new level holding both.
        let old = std::mem::replace(&mut node.a[i], Slot::Empty);
        let mut child = Node::new();
        match old {
            Slot::Note(l) => self.insert(&mut child, n + 1, l, false, false)?,
            Slot::Subtree(l) => self.insert(&mut child, n + 1, l, true, false)?,
            Slot::Empty | Slot::Internal(_) => {}
        }
        self.insert(&mut child, n + 1, entry, subtree, overwrite)?;
        node.a[i] = Slot::Internal(child);
        Ok(())
    }

    /// `combine_notes_concatenate`: an empty side adds nothing; otherwise the current text
    /// without one final newline, a blank line, and the new text, as a new blob.
    fn concatenate(&self, cur: gix::ObjectId, new: gix::ObjectId) -> Result<gix::ObjectId> {
        let read = |id: gix::ObjectId| -> Result<Vec<u8>> {
            let mut buf = Vec::new();
            match self.odb.try_find(&id, &mut buf) {
                Ok(Some(data)) if data.kind == gix::object::Kind::Blob => Ok(data.data.to_vec()),
                Ok(_) => Ok(Vec::new()),
                Err(e) => Err(Error::new(
                    ErrorKind::Corrupt,
                    OP,
                    format!("note blob {id} cannot be read"),
                )
                .with_source(e)),
            }
        };
        let new_text = read(new)?;
        if new_text.is_empty() {
            return Ok(cur);
        }
        let mut text = read(cur)?;
        if text.is_empty() {
            return Ok(new);
        }
        if text.ends_with(b"\n") {
            text.pop();
        }
        text.extend_from_slice(b"\n\n");
        text.extend_from_slice(&new_text);
        self.odb
            .write_buf(gix::object::Kind::Blob, &text)
            .map_err(|e| {
                Error::new(ErrorKind::Backend, OP, "cannot write a joined note").with_source(e)
            })
    }

    /// git's `note_tree_remove`: clears the note of `key`, then folds each trie level left
    /// with a single note into its parent's slot. Whether a note was removed.
    fn remove(&mut self, node: &mut Node, n: usize, key: &[u8; 32]) -> Result<bool> {
        if let Slot::Subtree(l) = &node.a[0]
            && self.in_subtree(key, l)
        {
            let l = *l;
            node.a[0] = Slot::Empty;
            self.load(&l, node, n)?;
            return self.remove(node, n, key);
        }
        let i = nibble(n, key);
        match &mut node.a[i] {
            Slot::Internal(child) => {
                let removed = self.remove(child, n + 1, key)?;
                if removed {
                    // Consolidate: a child left with one note (or none) collapses into its slot.
                    let mut only = None;
                    let mut count = 0;
                    for (j, s) in child.a.iter().enumerate() {
                        if !matches!(s, Slot::Empty) {
                            count += 1;
                            only = Some(j);
                        }
                    }
                    match (count, only) {
                        (0, _) => node.a[i] = Slot::Empty,
                        (1, Some(j)) if matches!(child.a[j], Slot::Note(_)) => {
                            let s = std::mem::replace(&mut child.a[j], Slot::Empty);
                            node.a[i] = s;
                        }
                        _ => {}
                    }
                }
                Ok(removed)
            }
            Slot::Subtree(l) if self.in_subtree(key, l) => {
                let l = *l;
                node.a[i] = Slot::Empty;
                self.load(&l, node, n)?;
                self.remove(node, n, key)
            }
            Slot::Note(l) if l.key == *key => {
                node.a[i] = Slot::Empty;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// git's `write_notes_tree`: the id of the tree written.
    pub(crate) fn write(mut self) -> Result<gix::ObjectId> {
        let mut out = Writer {
            stack: vec![(Vec::new(), [0u8; 2])],
            non_notes: std::mem::take(&mut self.non_notes).into_iter().collect(),
            next_non_note: 0,
        };
        let mut root = std::mem::replace(&mut self.root, Node::new());
        self.each(&mut root, 0, 0, &mut out)?;
        out.non_notes_until(None, self.odb)?;
        out.finish_from(0, self.odb)?;
        let (buf, _) = out.stack.pop().unwrap_or_default();
        self.odb
            .write_buf(gix::object::Kind::Tree, &buf)
            .map_err(|e| {
                Error::new(ErrorKind::Backend, OP, "cannot write a notes tree").with_source(e)
            })
    }

    /// git's `determine_fanout`.
    fn fanout(node: &Node, n: usize, fanout: usize) -> usize {
        if !n.is_multiple_of(2) || n > 2 * fanout {
            return fanout;
        }
        if node
            .a
            .iter()
            .all(|s| matches!(s, Slot::Internal(_) | Slot::Subtree(_)))
        {
            fanout + 1
        } else {
            fanout
        }
    }

    /// The path of `key` with `fanout` directory levels (git's `construct_path_with_fanout`).
    fn path(&self, key: &[u8; 32], fanout: usize) -> Vec<u8> {
        let hex = hex::encode(&key[..self.len()]).into_bytes();
        let mut path = Vec::with_capacity(hex.len() + fanout);
        for pair in hex.chunks(2).take(fanout) {
            path.extend_from_slice(pair);
            path.push(b'/');
        }
        path.extend_from_slice(&hex[(2 * fanout).min(hex.len())..]);
        path
    }

    /// git's `for_each_note_helper` with `write_each_note`: unloaded directories above the
    /// fanout are written back as they are, deeper ones are loaded and their notes written.
    fn each(&mut self, node: &mut Node, n: usize, fanout: usize, out: &mut Writer) -> Result<()> {
        let fanout = Self::fanout(node, n, fanout);
        let mut i = 0;
        while i < 16 {
            match &mut node.a[i] {
                Slot::Internal(child) => self.each(child, n + 1, fanout, out)?,
                Slot::Subtree(l) => {
                    let l = *l;
                    if n < 2 * fanout {
                        let plen = usize::from(l.key[self.key_index()]);
                        let mut path = self.path(&l.key, fanout);
                        path.truncate(plen * 2 + fanout);
                        if path.last() == Some(&b'/') {
                            path.pop();
                        }
                        out.entry(&path, 0o40000, l.val, self.odb)?;
                    } else {
                        node.a[i] = Slot::Empty;
                        self.load(&l, node, n)?;
                        continue;
                    }
                }
                Slot::Note(l) => {
                    let l = *l;
                    let path = self.path(&l.key, fanout);
                    out.entry(&path, 0o100644, l.val, self.odb)?;
                }
                Slot::Empty => {}
            }
            i += 1;
        }
        Ok(())
    }
}

/// git's `tree_write_stack`: the open tree of each directory level, entries appended in the
/// order they come.
struct Writer {
    /// (entries so far, name of the open subdirectory in it, if any)
    stack: Vec<(Vec<u8>, [u8; 2])>,
    non_notes: Vec<(Vec<u8>, NonNote)>,
    next_non_note: usize,
}

impl Writer {
    /// Writes the open trees below level `depth` and enters each into its parent.
    fn finish_from(&mut self, depth: usize, odb: &impl Write) -> Result<()> {
        while self.stack.len() > depth + 1 {
            let (buf, _) = self.stack.pop().unwrap_or_default();
            let id = odb.write_buf(gix::object::Kind::Tree, &buf).map_err(|e| {
                Error::new(ErrorKind::Backend, OP, "cannot write a notes tree").with_source(e)
            })?;
            if let Some((parent, name)) = self.stack.last_mut() {
                let name = *name;
                push_entry(parent, 0o40000, &name, &id);
                if let Some((_, open)) = self.stack.last_mut() {
                    *open = [0; 2];
                }
            }
        }
        Ok(())
    }

    /// git's `write_each_note_helper`.
    fn put(&mut self, path: &[u8], mode: u16, id: gix::ObjectId, odb: &impl Write) -> Result<()> {
        let mut n = 0;
        while n < self.stack.len() && 3 * n < path.len() {
            let open = self.stack[n].1;
            let rest = &path[3 * n..];
            if open != [0; 2] && rest.len() > 2 && rest[..2] == open && rest[2] == b'/' {
                n += 1;
            } else {
                break;
            }
        }
        self.finish_from(n, odb)?;
        while 3 * n + 2 < path.len() && path[3 * n + 2] == b'/' {
            let name = [path[3 * n], path[3 * n + 1]];
            if let Some((_, open)) = self.stack.last_mut() {
                *open = name;
            }
            self.stack.push((Vec::new(), [0; 2]));
            n += 1;
        }
        if path[3 * n..].contains(&b'/') {
            return Err(Error::new(
                ErrorKind::Corrupt,
                OP,
                format!(
                    "a non-note entry {} does not fit the fanout",
                    String::from_utf8_lossy(path)
                ),
            ));
        }
        if let Some((buf, _)) = self.stack.last_mut() {
            push_entry(buf, mode, &path[3 * n..], &id);
        }
        Ok(())
    }

    /// git's `write_each_non_note_until`: the non-notes sorting up to `path` (all when `None`);
    /// one at exactly `path` gives way to the note.
    fn non_notes_until(&mut self, path: Option<&[u8]>, odb: &impl Write) -> Result<()> {
        while self.next_non_note < self.non_notes.len() {
            let (p, nn) = &self.non_notes[self.next_non_note];
            let order = path.map(|path| p.as_slice().cmp(path));
            if order == Some(std::cmp::Ordering::Greater) {
                break;
            }
            let (p, mode, id) = (p.clone(), nn.mode, nn.id);
            self.next_non_note += 1;
            if order != Some(std::cmp::Ordering::Equal) {
                self.put(&p, mode, id, odb)?;
            }
        }
        Ok(())
    }

    fn entry(&mut self, path: &[u8], mode: u16, id: gix::ObjectId, odb: &impl Write) -> Result<()> {
        self.non_notes_until(Some(path), odb)?;
        self.put(path, mode, id, odb)
    }
}

fn push_entry(buf: &mut Vec<u8>, mode: u16, name: &[u8], id: &gix::oid) {
    buf.extend_from_slice(format!("{mode:o} ").as_bytes());
    buf.extend_from_slice(name);
    buf.push(0);
    buf.extend_from_slice(id.as_bytes());
}
