//! The notes protocol on top of a [`NotesBackend`]: write, batch write, show, list, namespace rules.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use squad_model::{AgentName, NoteEntry};

use crate::backend::{NoteEdit, NotesBackend, NotesBackendExt};
use crate::error::{Error, ErrorKind, Result};
use crate::format::{self, ParsedNote};
use crate::oid::{NotesRef, Oid};
use crate::parallel;

/// The notes-commit message of every write, as `git notes append` writes it.
pub const APPEND_MESSAGE: &str = "Notes added by 'git notes append'\n";

/// How often and how long a write retries after losing a compare-and-swap race.
///
/// Attempt `n` (from 0) sleeps a random time in `0..=min(cap, base * 2^n)` ("full jitter") before
/// trying again; after `max_attempts` attempts the write fails with [`ErrorKind::Conflict`].
/// The default (200 attempts, 1 ms base, 25 ms cap) gives a dozen concurrent writers on one ref
/// room to all succeed, and bounds a hopeless write to about 2.5 s of sleeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// How many times the whole read-modify-write is tried (at least 1).
    pub max_attempts: u32,
    /// The first back-off ceiling.
    pub base: Duration,
    /// The largest back-off ceiling.
    pub cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 200,
            base: Duration::from_millis(1),
            cap: Duration::from_millis(25),
        }
    }
}

impl RetryPolicy {
    fn sleep(&self, attempt: u32) {
        let ceiling = self
            .base
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.cap);
        let micros = u64::try_from(ceiling.as_micros()).unwrap_or(u64::MAX);
        let pause = rand::rngs::StdRng::from_os_rng().random_range(0..=micros);
        std::thread::sleep(Duration::from_micros(pause));
    }
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOutcome {
    /// The tip of the notes ref after the write.
    pub tip: Oid,
    /// `false` when every entry was already there, byte for byte: nothing was written.
    pub changed: bool,
    /// How many read-modify-write attempts it took (1 without contention).
    pub attempts: u32,
}

/// The squad notes protocol over any [`NotesBackend`].
///
/// - Entries live in `refs/notes/squad/<namespace>`, one compact JSON line each.
/// - Every entry is checked against the note-entry schema before anything is written.
/// - **Namespace rule:** the entry's `agent` may write its own namespace and the shared ones
///   (`research`, `review`) only; anything else is [`ErrorKind::PermissionDenied`].
/// - **Append-only, in every namespace:** a write appends. Writing an entry whose id is already
///   in the note is a no-op when its line is byte-identical to the stored one (so a retried
///   write with a fixed id changes nothing), and is refused with [`ErrorKind::InvalidInput`]
///   otherwise: a correction is a new entry naming the old one in `supersedes`.
/// - **Lossless under concurrency:** each write is a read-modify-write at one tip, published by
///   compare-and-swap and retried with jittered back-off ([`RetryPolicy`]).
///
/// ```
/// use squad_model::{AgentName, NoteEntry, NoteType};
/// use squad_notes::{InMemoryNotes, Notes, Oid};
///
/// let notes = Notes::new(InMemoryNotes::new());
/// let data = AgentName::new("data")?;
/// let commit: Oid = "1111111111111111111111111111111111111111".parse()?;
/// let mut entry = NoteEntry::new(data.clone(), NoteType::Decision);
/// entry.decision = Some("Use JWT".into());
/// notes.write(&data, &commit, &entry)?;
/// assert_eq!(notes.show(&data, &commit)?.entries, vec![entry]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Notes<B> {
    backend: B,
    retry: RetryPolicy,
}

impl<B: NotesBackend> Notes<B> {
    /// The protocol over `backend`, with the default [`RetryPolicy`].
    pub fn new(backend: B) -> Self {
        Self {
            backend,
            retry: RetryPolicy::default(),
        }
    }

    /// Replaces the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// Appends `entry` to the note of `commit` in `namespace`.
    ///
    /// # Errors
    ///
    /// - [`ErrorKind::InvalidInput`]: the entry breaks the note-entry schema.
    /// - [`ErrorKind::PermissionDenied`]: `entry.agent` may not write `namespace`.
    /// - [`ErrorKind::InvalidInput`] also when the note holds an entry with the same id and
    ///   other bytes (entries are append-only).
    /// - [`ErrorKind::Conflict`]: the retries ran out. In every error case nothing was written.
    pub fn write(
        &self,
        namespace: &AgentName,
        commit: &Oid,
        entry: &NoteEntry,
    ) -> Result<WriteOutcome> {
        self.write_batch(namespace, &[(commit.clone(), entry.clone())])
    }

    /// Appends many entries (on one or many commits) in **one** notes commit.
    ///
    /// Every entry is validated first; one bad entry fails the whole batch and nothing is written.
    ///
    /// # Errors
    ///
    /// As [`Notes::write`]; an empty batch is [`ErrorKind::InvalidInput`].
    pub fn write_batch(
        &self,
        namespace: &AgentName,
        entries: &[(Oid, NoteEntry)],
    ) -> Result<WriteOutcome> {
        const OP: &str = "notes.write";
        if entries.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                OP,
                "nothing to write: no entries",
            ));
        }
        let mut by_commit: BTreeMap<&Oid, Vec<&NoteEntry>> = BTreeMap::new();
        for (commit, entry) in entries {
            check_entry(namespace, entry)?;
            by_commit.entry(commit).or_default().push(entry);
        }
        let notes_ref = NotesRef::squad(namespace);
        // Cooperating writers take turns; compare-and-swap below keeps everyone else honest.
        let _turn = self.backend.lock_writes(&notes_ref)?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let tip = self.backend.tip(&notes_ref)?;
            let old = self.read_old(tip.as_ref(), by_commit.keys().copied())?;
            let mut edits = Vec::new();
            for (commit, new) in &by_commit {
                let old_bytes = old.get(*commit).map(Vec::as_slice).unwrap_or_default();
                if let Some(bytes) = merge_entries(namespace, commit, old_bytes, new)? {
                    edits.push(NoteEdit::set((*commit).clone(), bytes));
                }
            }
            if edits.is_empty()
                && let Some(tip) = tip
            {
                return Ok(WriteOutcome {
                    tip,
                    changed: false,
                    attempts: attempt,
                });
            }
            let published = self.publish(
                (OP, "writing"),
                &notes_ref,
                tip.as_ref(),
                &edits,
                APPEND_MESSAGE,
                attempt,
            )?;
            if let Some(tip) = published {
                return Ok(WriteOutcome {
                    tip,
                    changed: true,
                    attempts: attempt,
                });
            }
        }
    }

    /// Copies the entries of `namespace` on the commits `from` (in that order) onto the note of
    /// `to`, for a squash-merged or rebased pull request whose commits are not on the default
    /// branch: each copy is the entry's own JSON text with `"carried_from":"<commit>"` added at
    /// its end (a copy of a copy keeps the first `carried_from`), so every other byte, a
    /// signature included, stays the author's; ids are unchanged, so promotion still promotes
    /// each entry once. One notes commit, by compare-and-swap.
    ///
    /// Idempotent: an entry whose id the note of `to` already holds is skipped (counted in
    /// [`CarryReport::skipped`]), so carrying again changes nothing. Lines that are not valid
    /// entries are not copied (counted in [`CarryReport::unparsed`]).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Conflict`] when the retries ran out; backend failures. Nothing is written
    /// in either case.
    ///
    /// ```
    /// use squad_model::{AgentName, NoteEntry, NoteType};
    /// use squad_notes::{InMemoryNotes, Notes, Oid};
    ///
    /// let notes = Notes::new(InMemoryNotes::new());
    /// let data = AgentName::new("data")?;
    /// let old: Oid = "1111111111111111111111111111111111111111".parse()?;
    /// let landed: Oid = "2222222222222222222222222222222222222222".parse()?;
    /// notes.write(&data, &old, &NoteEntry::new(data.clone(), NoteType::Decision))?;
    /// let report = notes.carry(&data, &[old.clone()], &landed)?;
    /// assert_eq!(report.carried.len(), 1);
    /// let copy = &notes.show(&data, &landed)?.entries[0];
    /// assert_eq!(copy.extra["carried_from"], old.as_str());
    /// assert_eq!(notes.carry(&data, &[old], &landed)?.skipped, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn carry(&self, namespace: &AgentName, from: &[Oid], to: &Oid) -> Result<CarryReport> {
        const OP: &str = "notes.carry";
        let notes_ref = NotesRef::squad(namespace);
        let _turn = self.backend.lock_writes(&notes_ref)?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let Some(tip) = self.backend.tip(&notes_ref)? else {
                return Ok(CarryReport::default());
            };
            let old = self.backend.read(&tip, to)?.unwrap_or_default();
            let mut have: std::collections::HashSet<squad_model::EntryId> =
                format::parse_note(&old)
                    .entries
                    .into_iter()
                    .map(|e| e.id)
                    .collect();
            let mut report = CarryReport::default();
            let mut bytes = old;
            for source in from {
                if source == to {
                    continue;
                }
                let Some(blob) = self.backend.read(&tip, source)? else {
                    continue;
                };
                let note = format::parse_note_sourced(&blob);
                report.unparsed += note.unparsed.len();
                for sourced in &note.entries {
                    if !have.insert(sourced.entry.id.clone()) {
                        report.skipped += 1;
                        continue;
                    }
                    let line = carried_line(sourced, &blob, source)?;
                    format::push_line(&mut bytes, line.as_bytes());
                    report
                        .carried
                        .push((sourced.entry.id.clone(), source.clone()));
                }
            }
            if report.carried.is_empty() {
                return Ok(report);
            }
            let published = self.publish(
                (OP, "carrying into"),
                &notes_ref,
                Some(&tip),
                &[NoteEdit::set(to.clone(), bytes)],
                CARRY_MESSAGE,
                attempt,
            )?;
            if published.is_some() {
                return Ok(report);
            }
        }
    }

    /// Attempt `attempt` of a read-modify-write publishes `edits` on `notes_ref` by
    /// compare-and-swap from `tip`: the new tip, or `None` when another writer moved the ref
    /// and attempts are left (after the back-off sleep: read again and retry). `op` and `doing`
    /// (`"writing"`) name the operation when the retries run out.
    fn publish(
        &self,
        (op, doing): (&'static str, &str),
        notes_ref: &NotesRef,
        tip: Option<&Oid>,
        edits: &[NoteEdit],
        message: &str,
        attempt: u32,
    ) -> Result<Option<Oid>> {
        match self.backend.update(notes_ref, tip, edits, message) {
            Ok(tip) => Ok(Some(tip)),
            Err(e) if e.kind() == ErrorKind::Conflict && attempt < self.retry.max_attempts => {
                self.retry.sleep(attempt);
                Ok(None)
            }
            Err(e) if e.kind() == ErrorKind::Conflict => Err(Error::new(
                ErrorKind::Conflict,
                op,
                format!(
                    "gave up {doing} {notes_ref} after {attempt} attempts: other writers kept moving it"
                ),
            )
            .with_source(e)),
            Err(e) => Err(e),
        }
    }

    /// The old note bytes of `commits` at `tip`: one read per commit for small batches, one bulk
    /// read for large ones.
    fn read_old<'a>(
        &self,
        tip: Option<&Oid>,
        commits: impl ExactSizeIterator<Item = &'a Oid>,
    ) -> Result<HashMap<Oid, Vec<u8>>> {
        let Some(tip) = tip else {
            return Ok(HashMap::new());
        };
        if commits.len() > 64 {
            return Ok(self.backend.read_all(tip)?.into_iter().collect());
        }
        let mut out = HashMap::new();
        for commit in commits {
            if let Some(bytes) = self.backend.read(tip, commit)? {
                out.insert(commit.clone(), bytes);
            }
        }
        Ok(out)
    }

    /// All entries of `namespace` on `commit`, oldest first, de-duplicated by id, plus the lines
    /// that are not valid entries. A commit without a note gives an empty [`ParsedNote`].
    ///
    /// # Errors
    ///
    /// Backend failures only.
    pub fn show(&self, namespace: &AgentName, commit: &Oid) -> Result<ParsedNote> {
        Ok(self
            .read_raw(namespace, commit)?
            .map(|bytes| format::parse_note(&bytes))
            .unwrap_or_default())
    }

    /// The note bytes of `object` in `namespace`, exactly as stored (`None` without a note).
    /// Parse them with [`format::parse_note_sourced`] to show or copy entries byte for byte.
    ///
    /// # Errors
    ///
    /// Backend failures only.
    pub fn read_raw(&self, namespace: &AgentName, object: &Oid) -> Result<Option<Vec<u8>>> {
        self.backend
            .read_current(&NotesRef::squad(namespace), object)
    }

    /// The commits that have a note in `namespace`, sorted.
    ///
    /// # Errors
    ///
    /// Backend failures only.
    pub fn list(&self, namespace: &AgentName) -> Result<Vec<Oid>> {
        let notes_ref = NotesRef::squad(namespace);
        match self.backend.tip(&notes_ref)? {
            Some(tip) => self.backend.list(&tip),
            None => Ok(Vec::new()),
        }
    }

    /// Every note of `namespace`, parsed, sorted by commit.
    ///
    /// # Errors
    ///
    /// Backend failures only.
    pub fn read_all(&self, namespace: &AgentName) -> Result<Vec<(Oid, ParsedNote)>> {
        let notes_ref = NotesRef::squad(namespace);
        let Some(tip) = self.backend.tip(&notes_ref)? else {
            return Ok(Vec::new());
        };
        self.backend.read_all_parsed(&tip)
    }
}

/// The notes-commit message of [`Notes::carry`], as `git notes copy` writes it.
pub const CARRY_MESSAGE: &str = "Notes added by 'git notes copy'\n";

/// What [`Notes::carry`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CarryReport {
    /// The ids copied, in the order written, each with the commit it was copied from.
    pub carried: Vec<(squad_model::EntryId, Oid)>,
    /// Entries not copied because the target already holds their id.
    pub skipped: usize,
    /// Lines of the source notes that are not valid entries (not copied).
    pub unparsed: usize,
}

/// The line of a carried copy: the entry's own text with `carried_from` added before its
/// closing brace (kept as it is when it has one). An entry spread over several lines is
/// written again as one compact line, since a note holds one entry per line.
fn carried_line(sourced: &format::SourcedEntry, blob: &[u8], from: &Oid) -> Result<String> {
    let text = sourced.text(blob).trim();
    if sourced.entry.extra.contains_key("carried_from") {
        return Ok(format!("{text}\n"));
    }
    if !text.contains('\n')
        && let Some(body) = text.strip_suffix('}')
    {
        return Ok(format!(
            "{},\"carried_from\":\"{from}\"}}\n",
            body.trim_end()
        ));
    }
    let mut value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        Error::new(
            ErrorKind::Corrupt,
            "notes.carry",
            format!("entry {} cannot be copied: {e}", sourced.entry.id),
        )
    })?;
    if let Some(map) = value.as_object_mut() {
        map.insert("carried_from".into(), from.as_str().into());
    }
    let mut line = value.to_string();
    line.push('\n');
    Ok(line)
}

/// Checks one entry before anything is written: the schema and the namespace rule.
fn check_entry(namespace: &AgentName, entry: &NoteEntry) -> Result<()> {
    squad_model::schema::validate_note_entry(&entry.to_value())?;
    if !entry.agent.may_write(namespace) {
        return Err(Error::new(
            ErrorKind::PermissionDenied,
            "notes.write",
            format!(
                "agent {} may not write to namespace {}: only its own namespace and the shared research and review",
                entry.agent,
                NotesRef::squad(namespace)
            ),
        ));
    }
    Ok(())
}

/// The new bytes of one note after adding `new`, or `None` when nothing changes.
///
/// Entries are append-only in every namespace: an entry whose id the note already holds is a
/// no-op when its line is byte-identical to the stored one, and refused otherwise (a
/// correction is a new entry that names the old one in `supersedes`).
fn merge_entries(
    namespace: &AgentName,
    commit: &Oid,
    old: &[u8],
    new: &[&NoteEntry],
) -> Result<Option<Vec<u8>>> {
    let parsed = format::parse_note_sourced(old);
    let stored: HashMap<&squad_model::EntryId, &str> = parsed
        .entries
        .iter()
        .map(|e| (&e.entry.id, e.text(old)))
        .collect();
    let mut bytes: Option<Vec<u8>> = None;
    let mut added: HashMap<&squad_model::EntryId, String> = HashMap::new();
    for entry in new {
        let line = entry.to_line();
        let existing = stored
            .get(&entry.id)
            .copied()
            .or_else(|| added.get(&entry.id).map(String::as_str));
        match existing {
            Some(text) if text.trim() == line.trim_end() => {}
            Some(_) => {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    "notes.write",
                    format!(
                        "entry {} already exists on {commit} in {} with different content; entries \
                         are append-only: to correct it, write a new entry with \"supersedes\": \"{}\"",
                        entry.id,
                        NotesRef::squad(namespace),
                        entry.id
                    ),
                ));
            }
            None => {
                let bytes = bytes.get_or_insert_with(|| old.to_vec());
                format::push_line(bytes, line.as_bytes());
                added.insert(&entry.id, line);
            }
        }
    }
    Ok(bytes)
}

/// Parses note blobs, on several threads for large sets (parsing is pure).
pub(crate) fn parse_all(
    raw: &[(Oid, Vec<u8>)],
    op: &'static str,
) -> Result<Vec<(Oid, ParsedNote)>> {
    parallel::map_chunks(raw, parallel::PARALLEL_MIN, op, |part| {
        Ok(part
            .iter()
            .map(|(commit, bytes)| (commit.clone(), format::parse_note(bytes)))
            .collect())
    })
}
