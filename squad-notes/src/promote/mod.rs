//! Ralph's promotion: flagged note entries become permanent state, exactly once.
//!
//! - [`Promoter::promote`]: entries with `promote_to_permanent: true`, in every
//!   `refs/notes/squad/*` namespace, on commits reachable from the default branch (or in
//!   `<branch>..<merged-from>` for a squash- or rebase-merged PR) are appended to `decisions.md`.
//! - [`Promoter::archive`]: entries with `archive_on_close: true` on the commits of a closed,
//!   unmerged branch (`<branch>..<closed>`) are copied to `research/` (the notes stay).
//!
//! See the crate README, section *Promotion*, for the ledger and watermark rules.

mod markdown;
mod merge;

pub use merge::merge_state_file;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use gix::ObjectId;
use gix::bstr::ByteSlice;
use serde::{Deserialize, Serialize};
use squad_model::NoteEntry;

use crate::backend::NotesBackend;
use crate::format::{self, UnparsedLine};
use crate::gix_backend::GixNotes;
use crate::oid::{NotesRef, Oid};
use crate::state::{StateEdit, StateStore};
use crate::{Error, ErrorKind, Result};

/// The state key of `decisions.md`.
pub const DECISIONS_KEY: &str = "decisions.md";
/// The state key of the ledger of promoted entry ids: one `<id> <namespace> <commit> <run>` line
/// each, `<run>` being a fresh id per promotion run.
pub const PROMOTED_LEDGER_KEY: &str = "ledger/promoted";
/// The state key of the ledger of archived entry ids (one `<id> <key> <run>` line each).
pub const ARCHIVED_LEDGER_KEY: &str = "ledger/archived";
/// The state key of the promotion watermarks (JSON, one per branch).
pub const WATERMARK_KEY: &str = "ledger/watermark";
/// The directory (state key prefix) of archived entries.
pub const RESEARCH_DIR: &str = "research/";

const SQUAD_NOTES_PREFIX: &str = "refs/notes/squad/";
/// Candidate sets larger than this are read with one bulk read of the notes tree.
const BULK_READ_MIN: usize = 256;
/// Progress is reported every this many commits or notes.
const PROGRESS_EVERY: u64 = 4096;

/// What a long step is doing, for [`Promoter::with_progress`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stage {
    /// Walking commits; `done` commits so far.
    WalkCommits,
    /// Reading and parsing notes; `done` of `total` notes.
    ReadNotes,
}

/// One progress report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// The step.
    pub stage: Stage,
    /// Units done so far.
    pub done: u64,
    /// Units in all, when known.
    pub total: Option<u64>,
}

type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;

/// The notes a scan will look at: objects still to read, or notes already read and parsed.
enum Cand {
    Objects(Vec<Oid>),
    Parsed(Vec<(Oid, format::ParsedNote)>),
}

impl Cand {
    fn len(&self) -> usize {
        match self {
            Cand::Objects(o) => o.len(),
            Cand::Parsed(p) => p.len(),
        }
    }
}

/// What to promote: see [`Promoter::promote`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromoteOptions {
    /// The branch whose history is promoted (a ref name such as `main` or `origin/main`).
    /// `None`: the default branch ([`Promoter::default_branch`]).
    pub branch: Option<String>,
    /// A squash- or rebase-merged PR's tip: promote the notes on `<branch>..<merged_from>`.
    pub merged_from: Option<String>,
    /// Compute and report, write nothing.
    pub dry_run: bool,
}

/// What to archive: see [`Promoter::archive`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchiveOptions {
    /// The tip of the closed, unmerged branch.
    pub closed: String,
    /// The branch it was proposed against; `None`: the default branch.
    pub branch: Option<String>,
    /// Compute and report, write nothing.
    pub dry_run: bool,
}

/// A flagged entry found on a commit.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundEntry {
    /// The namespace (notes ref) holding it.
    pub notes_ref: NotesRef,
    /// The annotated commit.
    pub commit: Oid,
    /// The entry.
    pub entry: NoteEntry,
}

/// A note line that is not a valid entry: reported, counted as skipped, left in the notes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unparseable {
    /// The namespace (notes ref) holding it.
    pub notes_ref: NotesRef,
    /// The annotated commit.
    pub commit: Oid,
    /// The line and why it is not an entry.
    pub line: UnparsedLine,
}

/// What a promotion run did (or, for a dry run, would do).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PromoteReport {
    /// The branch ref the run was about (full name).
    pub branch: String,
    /// The entries appended to `decisions.md` by this run, in the order written.
    pub promoted: Vec<FoundEntry>,
    /// Flagged entries the run's check refused ([`Promoter::promote_checked`]), with the
    /// reason; not promoted and not recorded in the ledger.
    pub refused: Vec<(FoundEntry, String)>,
    /// Valid entries without `promote_to_permanent: true`.
    pub unflagged: usize,
    /// Lines that are not valid entries (also counted in [`skipped`](Self::skipped)).
    pub unparseable: Vec<Unparseable>,
    /// Flagged entries already in the ledger (promoted by an earlier or concurrent run).
    pub already_promoted: usize,
    /// Commits examined (new commits only, in an incremental run).
    pub commits_scanned: usize,
    /// Notes read and parsed.
    pub notes_read: usize,
    /// `true` when the run started from a saved watermark.
    pub incremental: bool,
    /// `true` for a dry run: nothing was written.
    pub dry_run: bool,
}

impl PromoteReport {
    /// Entries not promoted because they are unflagged or not valid entries.
    pub fn skipped(&self) -> usize {
        self.unflagged + self.unparseable.len()
    }
}

/// What an archive run did (or, for a dry run, would do).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ArchiveReport {
    /// The archived entries with the state key each was written to.
    pub archived: Vec<(FoundEntry, String)>,
    /// Valid entries without `archive_on_close: true`.
    pub unflagged: usize,
    /// Lines that are not valid entries.
    pub unparseable: Vec<Unparseable>,
    /// Flagged entries already in the archive ledger.
    pub already_archived: usize,
    /// Commits of the closed branch examined.
    pub commits_scanned: usize,
    /// `true` for a dry run: nothing was written.
    pub dry_run: bool,
}

impl ArchiveReport {
    /// Entries not archived because they are unflagged or not valid entries.
    pub fn skipped(&self) -> usize {
        self.unflagged + self.unparseable.len()
    }
}

/// The saved position of the promotion of one branch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Mark {
    /// The branch tip at the end of the last run.
    tip: String,
    /// Every squad notes ref's tip at the end of the last run.
    notes: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Watermarks {
    version: u32,
    branches: BTreeMap<String, Mark>,
}

/// Promotion and archiving over a git repository (commits and notes, read with gix) and a
/// [`StateStore`] (where `decisions.md`, `research/` and the ledgers go).
///
/// # Behavior
///
/// - **Exactly once.** Every promoted (archived) entry id is recorded in a ledger on the state
///   store, in the same atomic [`StateStore::apply`] as the Markdown it produced. The batch also
///   carries [`StateEdit::Expect`]s of the ledger and watermark as this run read them; when a
///   concurrent run got there first the batch fails with a conflict, and the run re-reads the
///   ledger, filters again and retries. So re-runs and concurrent runs promote each id once.
/// - **Incremental.** See the crate README (*Promotion*) for the watermark rule.
/// - **Nothing is lost.** Lines that are not valid entries are reported and counted as
///   skipped; notes are never modified.
///
/// ```no_run
/// use squad_notes::promote::{PromoteOptions, Promoter};
/// use squad_notes::state::OrphanBranchStore;
///
/// # fn main() -> squad_notes::Result<()> {
/// let state = OrphanBranchStore::open(".")?;
/// let promoter = Promoter::open(".".as_ref(), state)?;
/// let report = promoter.promote(&PromoteOptions::default())?;
/// println!("promoted {}, skipped {}", report.promoted.len(), report.skipped());
/// # Ok(()) }
/// ```
pub struct Promoter<S> {
    repo: gix::ThreadSafeRepository,
    notes: GixNotes,
    state: S,
    progress: Option<ProgressFn>,
    max_attempts: u32,
    /// Progress of the current run: commits walked, notes read, notes to read. Every walk and
    /// read adds to these, so the reported counts only grow during a run.
    walked: AtomicU64,
    read: AtomicU64,
    to_read: AtomicU64,
}

impl<S: std::fmt::Debug> std::fmt::Debug for Promoter<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Promoter")
            .field("git_dir", &self.repo.git_dir())
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

fn backend(op: &'static str, message: impl Into<String>) -> impl FnOnce(gix::Error) -> Error {
    let message = message.into();
    move |e| Error::new(ErrorKind::Backend, op, message).with_source(e)
}

impl<S: StateStore> Promoter<S> {
    /// Finds the repository containing `path` and promotes into `state`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when `path` is not in a git repository.
    pub fn open(path: &Path, state: S) -> Result<Self> {
        let repo = gix::ThreadSafeRepository::discover(path).map_err(|e| {
            Error::new(
                ErrorKind::NotFound,
                "promote.open",
                format!("not a git repository (or any parent): {}", path.display()),
            )
            .with_source(e)
        })?;
        let notes = GixNotes::open(repo.git_dir())?;
        Ok(Self {
            repo,
            notes,
            state,
            progress: None,
            max_attempts: 64,
            walked: AtomicU64::new(0),
            read: AtomicU64::new(0),
            to_read: AtomicU64::new(0),
        })
    }

    /// Calls `f` now and then during long walks and reads.
    pub fn with_progress(mut self, f: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }

    /// How many times a batch that lost to a concurrent run is recomputed (at least 1; default 64).
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// The state store.
    pub fn state(&self) -> &S {
        &self.state
    }

    fn report(&self, stage: Stage, done: u64, total: Option<u64>) {
        if let Some(f) = &self.progress {
            f(Progress { stage, done, total });
        }
    }

    /// Starts the progress counts of a run.
    fn start_run(&self) {
        self.walked.store(0, Ordering::Relaxed);
        self.read.store(0, Ordering::Relaxed);
        self.to_read.store(0, Ordering::Relaxed);
    }

    /// Adds `n` walked commits and reports the run's total so far.
    fn walked(&self, n: u64) {
        let done = self.walked.fetch_add(n, Ordering::Relaxed) + n;
        self.report(Stage::WalkCommits, done, None);
    }

    /// Adds `n` notes read and reports the run's total so far, of all the notes to read.
    fn read_done(&self, n: u64) {
        let done = self.read.fetch_add(n, Ordering::Relaxed) + n;
        let total = self.to_read.load(Ordering::Relaxed).max(done);
        self.report(Stage::ReadNotes, done, Some(total));
    }

    /// The default branch as a full ref name: git config `squad.defaultBranch` when set, else
    /// the target of `refs/remotes/<remote>/HEAD` (`origin` first, then the other remotes in
    /// configuration order). Never the local `HEAD`. The configuration is the one read when
    /// the promoter was opened.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when neither is set (the message says how to set one), or when
    /// `squad.defaultBranch` names a ref that does not exist.
    pub fn default_branch(&self) -> Result<String> {
        let repo = self.repo.to_thread_local();
        if let Some(value) = repo.config_snapshot().string("squad.defaultBranch") {
            let value = value.to_str_lossy().trim().to_owned();
            if !value.is_empty() {
                return resolve_ref(&repo, &value).map_err(|e| {
                    Error::new(
                        ErrorKind::NotFound,
                        "promote.branch",
                        format!(
                            "git config squad.defaultBranch is {value:?}: {}",
                            e.message()
                        ),
                    )
                });
            }
        }
        let mut remotes: Vec<String> = repo
            .remote_names()
            .iter()
            .map(|n| n.to_str_lossy().into_owned())
            .collect();
        remotes.sort_by_key(|r| r != "origin");
        if !remotes.iter().any(|r| r == "origin") {
            remotes.insert(0, "origin".to_owned());
        }
        for remote in &remotes {
            let head = format!("refs/remotes/{remote}/HEAD");
            if let Ok(Some(r)) = repo.try_find_reference(head.as_str())
                && let Some(target) = r.target().try_name()
            {
                return Ok(target.as_bstr().to_str_lossy().into_owned());
            }
        }
        Err(Error::new(
            ErrorKind::NotFound,
            "promote.branch",
            "no default branch: git config squad.defaultBranch is not set and no remote has a HEAD \
             (refs/remotes/<remote>/HEAD); set one with `git config squad.defaultBranch main` or \
             `git remote set-head origin --auto`, or pass --branch",
        ))
    }

    fn branch_ref(&self, branch: Option<&str>) -> Result<String> {
        match branch {
            Some(b) => resolve_ref(&self.repo.to_thread_local(), b),
            None => self.default_branch(),
        }
    }

    /// Promotes the flagged entries on the default branch (or `options.branch`), or on
    /// `<branch>..<merged_from>` when `options.merged_from` is set.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`]: no default branch, or a branch or revision that does not exist.
    /// [`ErrorKind::Conflict`]: concurrent runs kept winning for every attempt. State store and
    /// repository failures. In every error case nothing was written.
    pub fn promote(&self, options: &PromoteOptions) -> Result<PromoteReport> {
        self.promote_checked(options, &|_| None)
    }

    /// [`Promoter::promote`], promoting only the entries `check` accepts: for each flagged
    /// entry not promoted yet, `check` returns `None` to promote it or `Some(reason)` to
    /// refuse it (for example `"unsigned"` when only signed entries may be promoted). Refused
    /// entries are listed in [`PromoteReport::refused`], are not recorded in the ledger (a later
    /// run may promote them), and do not stop the others.
    ///
    /// # Errors
    ///
    /// As [`Promoter::promote`].
    pub fn promote_checked(
        &self,
        options: &PromoteOptions,
        check: &dyn Fn(&FoundEntry) -> Option<String>,
    ) -> Result<PromoteReport> {
        let _span = tracing::info_span!("notes.promote").entered();
        self.start_run();
        let branch = self.branch_ref(options.branch.as_deref())?;
        let repo = self.repo.to_thread_local();
        let branch_tip = peel_commit(&repo, &branch)?;
        let refs = squad_refs(&repo)?;
        let (watermarks, watermark_bytes) = self.read_watermarks()?;

        // The commits and notes to look at.
        let (candidates, commits_scanned, incremental) = match &options.merged_from {
            Some(rev) => {
                let tip = peel_commit(&repo, rev)?;
                let commits = self.walk(&repo, tip, Some(branch_tip))?;
                let n = commits.len();
                let mut out = Vec::new();
                for (name, notes_tip) in &refs {
                    let noted = self.noted(name, notes_tip)?;
                    out.push((
                        name.clone(),
                        notes_tip.clone(),
                        Cand::Objects(filter(noted, &commits)),
                    ));
                }
                (out, n, false)
            }
            None => self.scan_branch(&repo, &branch, branch_tip, &refs, &watermarks)?,
        };

        let mut found = Vec::new();
        let mut unflagged = 0;
        let mut unparseable = Vec::new();
        let mut notes_read = 0;
        self.to_read.store(
            candidates.iter().map(|c| c.2.len() as u64).sum(),
            Ordering::Relaxed,
        );
        for (name, notes_tip, objects) in candidates {
            notes_read += objects.len();
            for (commit, parsed) in self.read_parsed(&notes_tip, objects)? {
                for entry in parsed.entries {
                    if entry.promotes() {
                        found.push(FoundEntry {
                            notes_ref: name.clone(),
                            commit: commit.clone(),
                            entry,
                        });
                    } else {
                        unflagged += 1;
                    }
                }
                unparseable.extend(parsed.unparsed.into_iter().map(|line| Unparseable {
                    notes_ref: name.clone(),
                    commit: commit.clone(),
                    line,
                }));
            }
        }
        found.sort_by(|a, b| {
            a.entry
                .display_order(&b.entry)
                .then_with(|| a.notes_ref.cmp(&b.notes_ref))
        });

        // The new watermark: only a full-branch run moves it.
        let new_mark = options.merged_from.is_none().then(|| Mark {
            tip: branch_tip.to_string(),
            notes: refs
                .iter()
                .map(|(r, t)| (r.as_str().to_owned(), t.as_str().to_owned()))
                .collect(),
        });

        let mut report = PromoteReport {
            branch: branch.clone(),
            promoted: Vec::new(),
            refused: Vec::new(),
            unflagged,
            unparseable,
            already_promoted: 0,
            commits_scanned,
            notes_read,
            incremental,
            dry_run: options.dry_run,
        };

        // Read the ledger, filter, write — retried from a fresh read when a concurrent run won.
        let mut watermark_bytes = watermark_bytes;
        for attempt in 0..self.max_attempts {
            if attempt > 0 {
                std::thread::sleep(backoff(attempt));
            }
            // Nothing flagged in what was scanned: the ledger is not needed (it can be large).
            let ledger = if found.is_empty() {
                None
            } else {
                self.state.read(PROMOTED_LEDGER_KEY)?
            };
            let done = ledger_ids(ledger.as_deref());
            let mut fresh = Vec::new();
            let mut refused = Vec::new();
            let mut seen = HashSet::new();
            let mut already = 0;
            for f in &found {
                if done.contains(f.entry.id.as_str()) {
                    already += 1;
                } else if seen.insert(f.entry.id.as_str()) {
                    match check(f) {
                        None => fresh.push(f.clone()),
                        Some(reason) => refused.push((f.clone(), reason)),
                    }
                }
            }
            report.promoted = fresh;
            report.refused = refused;
            report.already_promoted = already;
            tracing::info!(
                promoted = report.promoted.len(),
                refused = report.refused.len(),
                already_promoted = already,
                dry_run = options.dry_run,
                "promotion planned"
            );
            if options.dry_run {
                return Ok(report);
            }
            let mut edits = vec![StateEdit::expect(WATERMARK_KEY, watermark_bytes.clone())];
            if !report.promoted.is_empty() {
                edits.push(StateEdit::expect(PROMOTED_LEDGER_KEY, ledger));
                let mut md = String::new();
                if self.state.read(DECISIONS_KEY)?.is_none() {
                    md.push_str(markdown::DECISIONS_HEADER);
                }
                let mut lines = String::new();
                // The run id also keeps two runs' batches from ever being byte-identical.
                let run = squad_model::EntryId::generate();
                for f in &report.promoted {
                    md.push_str(&markdown::decision(f));
                    lines.push_str(&format!(
                        "{} {} {} {run}\n",
                        f.entry.id, f.notes_ref, f.commit
                    ));
                }
                edits.push(StateEdit::append(DECISIONS_KEY, md));
                edits.push(StateEdit::append(PROMOTED_LEDGER_KEY, lines));
            }
            if let Some(mark) = &new_mark {
                let mut marks = parse_watermarks(watermark_bytes.as_deref())?;
                marks.version = 1;
                marks.branches.insert(branch.clone(), mark.clone());
                let bytes = to_json(&marks)?;
                if watermark_bytes.as_deref() != Some(bytes.as_slice()) {
                    edits.push(StateEdit::write(WATERMARK_KEY, bytes));
                }
            }
            if edits.len() == 1 {
                // Nothing to promote and the watermark is current: nothing to write.
                return Ok(report);
            }
            match self.state.apply(&edits) {
                Ok(()) => return Ok(report),
                Err(e) if e.kind() == ErrorKind::Conflict => {
                    watermark_bytes = self.state.read(WATERMARK_KEY)?;
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::new(
            ErrorKind::Conflict,
            "promote",
            format!(
                "concurrent promotions kept changing the ledger: gave up after {} attempts",
                self.max_attempts
            ),
        ))
    }

    /// Archives the entries with `archive_on_close: true` (in every squad namespace) on the
    /// commits of `<branch>..<closed>` to `research/`, once each.
    ///
    /// # Errors
    ///
    /// As [`Promoter::promote`].
    pub fn archive(&self, options: &ArchiveOptions) -> Result<ArchiveReport> {
        let _span = tracing::info_span!("notes.archive").entered();
        self.start_run();
        let branch = self.branch_ref(options.branch.as_deref())?;
        let repo = self.repo.to_thread_local();
        let base = peel_commit(&repo, &branch)?;
        let tip = peel_commit(&repo, &options.closed)?;
        let commits = self.walk(&repo, tip, Some(base))?;
        let mut found = Vec::new();
        let mut unflagged = 0;
        let mut unparseable = Vec::new();
        let mut candidates = Vec::new();
        for (name, notes_tip) in squad_refs(&repo)? {
            let objects = filter(self.noted(&name, &notes_tip)?, &commits);
            candidates.push((name, notes_tip, objects));
        }
        self.to_read.store(
            candidates.iter().map(|c| c.2.len() as u64).sum(),
            Ordering::Relaxed,
        );
        for (name, notes_tip, objects) in candidates {
            for (commit, parsed) in self.read_parsed(&notes_tip, Cand::Objects(objects))? {
                for entry in parsed.entries {
                    if entry.archives_on_close() {
                        found.push(FoundEntry {
                            notes_ref: name.clone(),
                            commit: commit.clone(),
                            entry,
                        });
                    } else {
                        unflagged += 1;
                    }
                }
                unparseable.extend(parsed.unparsed.into_iter().map(|line| Unparseable {
                    notes_ref: name.clone(),
                    commit: commit.clone(),
                    line,
                }));
            }
        }
        found.sort_by(|a, b| a.entry.display_order(&b.entry));
        let mut report = ArchiveReport {
            archived: Vec::new(),
            unflagged,
            unparseable,
            already_archived: 0,
            commits_scanned: commits.len(),
            dry_run: options.dry_run,
        };
        let closed_tip = crate::gix_backend::from_gix(&tip);
        for attempt in 0..self.max_attempts {
            if attempt > 0 {
                std::thread::sleep(backoff(attempt));
            }
            let ledger = self.state.read(ARCHIVED_LEDGER_KEY)?;
            let done = ledger_ids(ledger.as_deref());
            let mut fresh = Vec::new();
            let mut seen = HashSet::new();
            let mut already = 0;
            for f in &found {
                if done.contains(f.entry.id.as_str()) {
                    already += 1;
                } else if seen.insert(f.entry.id.as_str()) {
                    let key = format!("{RESEARCH_DIR}{}", markdown::archive_name(&f.entry));
                    fresh.push((f.clone(), key));
                }
            }
            report.archived = fresh;
            report.already_archived = already;
            if options.dry_run || report.archived.is_empty() {
                return Ok(report);
            }
            let mut edits = vec![StateEdit::expect(ARCHIVED_LEDGER_KEY, ledger)];
            let mut lines = String::new();
            let run = squad_model::EntryId::generate();
            for (f, key) in &report.archived {
                edits.push(StateEdit::write(
                    key.clone(),
                    markdown::archived(f, &closed_tip),
                ));
                lines.push_str(&format!("{} {key} {run}\n", f.entry.id));
            }
            edits.push(StateEdit::append(ARCHIVED_LEDGER_KEY, lines));
            match self.state.apply(&edits) {
                Ok(()) => return Ok(report),
                Err(e) if e.kind() == ErrorKind::Conflict => {}
                Err(e) => return Err(e),
            }
        }
        Err(Error::new(
            ErrorKind::Conflict,
            "archive",
            format!(
                "concurrent archive runs kept changing the ledger: gave up after {} attempts",
                self.max_attempts
            ),
        ))
    }

    fn read_watermarks(&self) -> Result<(Watermarks, Option<Vec<u8>>)> {
        let bytes = self.state.read(WATERMARK_KEY)?;
        Ok((parse_watermarks(bytes.as_deref())?, bytes))
    }

    /// The candidates of a full-branch run: per notes ref, the noted objects to read.
    #[allow(clippy::type_complexity, reason = "a private tuple of three results")]
    fn scan_branch(
        &self,
        repo: &gix::Repository,
        branch: &str,
        branch_tip: ObjectId,
        refs: &[(NotesRef, Oid)],
        watermarks: &Watermarks,
    ) -> Result<(Vec<(NotesRef, Oid, Cand)>, usize, bool)> {
        let mark = watermarks.branches.get(branch).and_then(|m| {
            let tip = ObjectId::from_hex(m.tip.as_bytes()).ok()?;
            // A watermark whose commit is gone (history rewritten and collected) is useless.
            repo.find_commit(tip).ok().map(|_| (tip, m))
        });
        let Some((old_tip, mark)) = mark else {
            // Cold: everything reachable. The commit walk and the bulk note reads are
            // independent, so they run side by side.
            let (commits, raws) = std::thread::scope(|scope| {
                let walker = scope.spawn(|| {
                    let repo = self.repo.to_thread_local();
                    self.walk(&repo, branch_tip, None)
                });
                let raws: Result<Vec<Vec<(Oid, format::ParsedNote)>>> = refs
                    .iter()
                    .map(|(_, notes_tip)| self.notes.read_all_parsed(notes_tip))
                    .collect();
                let commits = walker.join().map_err(|_| {
                    Error::new(
                        ErrorKind::Backend,
                        "promote.walk",
                        "the walking thread panicked",
                    )
                })?;
                Ok::<_, Error>((commits?, raws?))
            })?;
            let n = commits.len();
            let out = refs
                .iter()
                .zip(raws)
                .map(|((name, notes_tip), raw)| {
                    let raw = raw
                        .into_iter()
                        .filter(|(o, _)| {
                            ObjectId::from_hex(o.as_str().as_bytes())
                                .is_ok_and(|id| commits.contains(&id))
                        })
                        .collect();
                    (name.clone(), notes_tip.clone(), Cand::Parsed(raw))
                })
                .collect();
            return Ok((out, n, false));
        };
        // Incremental: the commits new since the watermark, for every ref; plus, for a notes
        // ref that moved, the objects whose note changed, if they are on the branch.
        let new_commits = if old_tip == branch_tip {
            HashSet::new()
        } else {
            self.walk(repo, branch_tip, Some(old_tip))?
        };
        let mut out = Vec::new();
        let mut changed_elsewhere: Vec<(usize, ObjectId)> = Vec::new();
        for (name, notes_tip) in refs {
            let old_notes = mark.notes.get(name.as_str());
            let mut objects: Vec<Oid> = Vec::new();
            if !new_commits.is_empty() {
                objects = filter(self.noted(name, notes_tip)?, &new_commits);
            }
            if old_notes.map(String::as_str) != Some(notes_tip.as_str()) {
                let old_tree = match old_notes {
                    Some(old) => notes_tree(repo, old).ok(),
                    None => None,
                };
                let new_tree = notes_tree(repo, notes_tip.as_str())?;
                let mut changed = Vec::new();
                diff_notes(repo, old_tree, new_tree, &mut Vec::new(), &mut changed)?;
                let have: HashSet<Oid> = objects.iter().cloned().collect();
                for object in changed {
                    if new_commits.contains(&object)
                        || have.contains(&crate::gix_backend::from_gix(&object))
                    {
                        continue;
                    }
                    changed_elsewhere.push((out.len(), object));
                }
            }
            out.push((name.clone(), notes_tip.clone(), Cand::Objects(objects)));
        }
        let mut scanned = new_commits.len();
        if !changed_elsewhere.is_empty() {
            // Old commits whose note changed: keep those on the branch (one walk, stopped as
            // soon as every one of them was seen).
            let wanted: HashSet<ObjectId> = changed_elsewhere.iter().map(|(_, o)| *o).collect();
            let on_branch = self.walk_until(repo, branch_tip, &wanted)?;
            scanned += on_branch.1;
            for (i, object) in changed_elsewhere {
                if on_branch.0.contains(&object)
                    && let Cand::Objects(objects) = &mut out[i].2
                {
                    objects.push(crate::gix_backend::from_gix(&object));
                }
            }
            for entry in &mut out {
                if let Cand::Objects(objects) = &mut entry.2 {
                    objects.sort();
                    objects.dedup();
                }
            }
        }
        Ok((out, scanned, true))
    }

    /// The commits reachable from `tip` and not from `hidden`.
    fn walk(
        &self,
        repo: &gix::Repository,
        tip: ObjectId,
        hidden: Option<ObjectId>,
    ) -> Result<HashSet<ObjectId>> {
        let mut platform = repo.rev_walk([tip]);
        if let Some(h) = hidden {
            platform = platform.with_hidden([h]);
        }
        let walk = platform
            .all()
            .map_err(backend("promote.walk", format!("cannot walk from {tip}")))?;
        let mut out = HashSet::new();
        for info in walk {
            let info = info.map_err(backend("promote.walk", format!("cannot walk from {tip}")))?;
            out.insert(info.id);
            if (out.len() as u64).is_multiple_of(PROGRESS_EVERY) {
                self.walked(PROGRESS_EVERY);
            }
        }
        self.walked(out.len() as u64 % PROGRESS_EVERY);
        Ok(out)
    }

    /// Which of `wanted` are reachable from `tip`, and how many commits were walked.
    fn walk_until(
        &self,
        repo: &gix::Repository,
        tip: ObjectId,
        wanted: &HashSet<ObjectId>,
    ) -> Result<(HashSet<ObjectId>, usize)> {
        let walk = repo
            .rev_walk([tip])
            .all()
            .map_err(backend("promote.walk", format!("cannot walk from {tip}")))?;
        let mut found = HashSet::new();
        let mut n = 0usize;
        for info in walk {
            let info = info.map_err(backend("promote.walk", format!("cannot walk from {tip}")))?;
            n += 1;
            if (n as u64).is_multiple_of(PROGRESS_EVERY) {
                self.walked(PROGRESS_EVERY);
            }
            if wanted.contains(&info.id) {
                found.insert(info.id);
                if found.len() == wanted.len() {
                    break;
                }
            }
        }
        self.walked(n as u64 % PROGRESS_EVERY);
        Ok((found, n))
    }

    fn noted(&self, _name: &NotesRef, tip: &Oid) -> Result<Vec<Oid>> {
        self.notes.list(tip)
    }

    /// Reads and parses the notes of `objects` at `tip` (several threads for large sets).
    fn read_parsed(&self, tip: &Oid, cand: Cand) -> Result<Vec<(Oid, format::ParsedNote)>> {
        let objects = match cand {
            Cand::Parsed(parsed) => {
                self.read_done(parsed.len() as u64);
                return Ok(parsed);
            }
            Cand::Objects(objects) => objects,
        };
        if objects.is_empty() {
            return Ok(Vec::new());
        }
        let raw: Vec<(Oid, Vec<u8>)> = if objects.len() >= BULK_READ_MIN {
            let wanted: HashSet<&Oid> = objects.iter().collect();
            self.notes
                .read_all(tip)?
                .into_iter()
                .filter(|(o, _)| wanted.contains(o))
                .collect()
        } else {
            let mut out = Vec::with_capacity(objects.len());
            for o in objects {
                if let Some(bytes) = self.notes.read(tip, &o)? {
                    out.push((o, bytes));
                }
            }
            out
        };
        self.parse(raw)
    }

    /// Parses note blobs (on several threads for large sets).
    fn parse(&self, raw: Vec<(Oid, Vec<u8>)>) -> Result<Vec<(Oid, format::ParsedNote)>> {
        let parsed = crate::notes::parse_all(&raw, "promote.read")?;
        self.read_done(raw.len() as u64);
        Ok(parsed)
    }
}

fn backoff(attempt: u32) -> std::time::Duration {
    let base_us = 500u64 << attempt.min(6);
    let jitter = crate::state::random_u64() % base_us;
    std::time::Duration::from_micros(base_us / 2 + jitter)
}

fn filter(noted: Vec<Oid>, commits: &HashSet<ObjectId>) -> Vec<Oid> {
    noted
        .into_iter()
        .filter(|o| ObjectId::from_hex(o.as_str().as_bytes()).is_ok_and(|id| commits.contains(&id)))
        .collect()
}

fn ledger_ids(bytes: Option<&[u8]>) -> HashSet<&str> {
    let Some(bytes) = bytes else {
        return HashSet::new();
    };
    bytes
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let id = line.split(|&b| b == b' ').next()?;
            std::str::from_utf8(id).ok().filter(|s| !s.is_empty())
        })
        .collect()
}

fn parse_watermarks(bytes: Option<&[u8]>) -> Result<Watermarks> {
    match bytes {
        None => Ok(Watermarks::default()),
        Some(b) => serde_json::from_slice(b).map_err(|e| {
            Error::new(
                ErrorKind::Corrupt,
                "promote.watermark",
                format!("{WATERMARK_KEY} on the state branch is not valid: {e}"),
            )
        }),
    }
}

fn to_json(marks: &Watermarks) -> Result<Vec<u8>> {
    let mut v = serde_json::to_vec_pretty(marks)
        .map_err(|e| Error::new(ErrorKind::Backend, "promote.watermark", e.to_string()))?;
    v.push(b'\n');
    Ok(v)
}

/// Resolves a branch name the way git does (`main`, `origin/main`, `refs/heads/main`) to a full
/// ref name.
fn resolve_ref(repo: &gix::Repository, name: &str) -> Result<String> {
    let not_found = || {
        Error::new(
            ErrorKind::NotFound,
            "promote.branch",
            format!("branch {name:?} not found"),
        )
    };
    match repo.try_find_reference(name) {
        Ok(Some(r)) => Ok(r.name().as_bstr().to_str_lossy().into_owned()),
        Ok(None) => Err(not_found()),
        Err(e) => Err(not_found().with_source(e)),
    }
}

fn peel_commit(repo: &gix::Repository, rev: &str) -> Result<ObjectId> {
    crate::gix_backend::peel_commit(repo, rev, "promote.resolve")
}

/// Every `refs/notes/squad/*` ref with its tip, sorted by name.
fn squad_refs(repo: &gix::Repository) -> Result<Vec<(NotesRef, Oid)>> {
    let err = || backend("promote.refs", "cannot list refs/notes/squad/*");
    let platform = repo.references().map_err(err())?;
    let iter = platform.prefixed(SQUAD_NOTES_PREFIX).map_err(err())?;
    let mut out = Vec::new();
    for r in iter {
        let mut r = r.map_err(|e| {
            Error::new(
                ErrorKind::Backend,
                "promote.refs",
                "cannot list refs/notes/squad/*",
            )
            .with_source(e)
        })?;
        let name = r.name().as_bstr().to_str_lossy().into_owned();
        let Ok(notes_ref) = NotesRef::new(&name) else {
            continue;
        };
        let id = r.peel_to_id().map_err(|e| {
            Error::new(
                ErrorKind::Corrupt,
                "promote.refs",
                format!("cannot read {name}"),
            )
            .with_source(e)
        })?;
        out.push((notes_ref, crate::gix_backend::from_gix(&id)));
    }
    out.sort();
    Ok(out)
}

/// The root tree of a notes commit.
fn notes_tree(repo: &gix::Repository, tip: &str) -> Result<ObjectId> {
    let err = || {
        Error::new(
            ErrorKind::Corrupt,
            "promote.diff",
            format!("notes commit {tip} cannot be read"),
        )
    };
    let id = ObjectId::from_hex(tip.as_bytes()).map_err(|e| err().with_source(e))?;
    let commit = repo.find_commit(id).map_err(|e| err().with_source(e))?;
    Ok(commit.tree_id().map_err(|e| err().with_source(e))?.detach())
}

/// The annotated objects whose note entries differ between two notes trees (`old: None`:
/// every note of `new`). Equal subtrees are skipped without being read, so the cost follows the
/// size of the change, not of the tree.
fn diff_notes(
    repo: &gix::Repository,
    old: Option<ObjectId>,
    new: ObjectId,
    prefix: &mut Vec<u8>,
    out: &mut Vec<ObjectId>,
) -> Result<()> {
    if old == Some(new) {
        return Ok(());
    }
    let read = |id: ObjectId| -> Result<Vec<(Vec<u8>, bool, ObjectId)>> {
        let tree = repo.find_tree(id).map_err(backend(
            "promote.diff",
            format!("cannot read notes tree {id}"),
        ))?;
        let decoded = tree
            .decode()
            .map_err(backend("promote.diff", format!("corrupt notes tree {id}")))?;
        Ok(decoded
            .entries
            .iter()
            .map(|e| (e.filename.to_vec(), e.mode.is_tree(), e.oid.to_owned()))
            .collect())
    };
    let old_entries: HashMap<(Vec<u8>, bool), ObjectId> = match old {
        Some(o) => read(o)?
            .into_iter()
            .map(|(n, t, id)| ((n, t), id))
            .collect(),
        None => HashMap::new(),
    };
    let hex_len = repo.object_hash().len_in_hex();
    for (name, is_tree, id) in read(new)? {
        if !name.iter().all(u8::is_ascii_hexdigit) {
            continue;
        }
        let before = old_entries.get(&(name.clone(), is_tree)).copied();
        if before == Some(id) {
            continue;
        }
        let len = prefix.len();
        prefix.extend_from_slice(&name);
        if is_tree && prefix.len() < hex_len {
            diff_notes(repo, before, id, prefix, out)?;
        } else if !is_tree
            && prefix.len() == hex_len
            && let Ok(object) = ObjectId::from_hex(prefix)
        {
            out.push(object);
        }
        prefix.truncate(len);
    }
    Ok(())
}
