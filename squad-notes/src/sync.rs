//! Sync of the squad notes refs between clones: fetch, merge entry by entry, push with a lease.
//!
//! [`sync`] runs the sequence of the reference (the git-appraise pattern), with the merge done
//! in Rust:
//!
//! 1. **Fetch** `refs/notes/squad/*` from the remote into the tracking refs
//!    `refs/notes/remotes/<remote>/squad/*` ([`Transport::fetch`]). No local ref is written.
//! 2. **Merge** every tracking ref into its local ref `refs/notes/squad/<ns>`:
//!    - identical tips, or the remote tip already in the local history: nothing to do;
//!    - no local ref, or the local tip in the remote history: fast-forward
//!      ([`NotesBackend::fast_forward`]), so no new commit is made;
//!    - otherwise a merge commit ([`NotesBackend::merge`]) whose parents are the local tip then
//!      the remote tip, and whose notes are, per annotated object, the byte-for-byte union of
//!      both sides ([`union_notes`]): objects on one side only are taken as they are; a note on
//!      both keeps the local bytes and gains the remote lines it lacks, each with its original
//!      bytes (an entry is never re-serialised); an id both sides hold with different bytes
//!      keeps both versions and is reported ([`SyncReport::conflicts`]).
//!
//!    Each local step is a compare-and-swap; a race with a local writer is retried.
//! 3. **Push** every local squad ref that differs from the remote, with a lease equal to the
//!    tracking tip just fetched ("must not exist" when the remote lacks the ref). A stale lease
//!    means another clone pushed meanwhile: fetch, merge and push again, with jittered back-off,
//!    a bounded number of times ([`SyncOptions::retry`]).
//!
//! [`sync_all`] carries the permanent-state branch (`refs/heads/squad-state`) through the same
//! rounds, so that promotion is exactly once across clones, and reports progress.
//!
//! Because the remote tip is a parent of the merge, the push fast-forwards the remote, and
//! `git notes merge -s cat_sort_uniq refs/notes/remotes/<remote>/squad/<ns>` afterwards reports
//! "Already up to date".

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use squad_model::EntryId;

use crate::backend::{NoteEdit, NotesBackend};
use crate::error::{Error, ErrorKind, Result};
use crate::format::union_notes;
use crate::notes::RetryPolicy;
use crate::oid::{NotesRef, Oid};
use crate::transport::{FetchRefspec, PushStatus, PushUpdate, Transport};

/// The prefix of every squad notes ref.
pub const SQUAD_PREFIX: &str = "refs/notes/squad/";

/// How [`sync_with`] retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncOptions {
    /// Rounds of fetch, merge and push when pushes lose races (`max_attempts`), and the
    /// back-off between them.
    pub retry: RetryPolicy,
    /// Attempts of one local merge when local writers keep moving the ref.
    pub local_retry: RetryPolicy,
}

impl Default for SyncOptions {
    /// 30 rounds with back-off ceilings from 20 ms to 1 s; 200 local attempts (1 ms to 25 ms).
    fn default() -> Self {
        Self {
            retry: RetryPolicy {
                max_attempts: 30,
                base: Duration::from_millis(20),
                cap: Duration::from_secs(1),
            },
            local_retry: RetryPolicy::default(),
        }
    }
}

/// What a local merge step did to one notes ref.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum MergeAction {
    /// Both tips were the same.
    UpToDate,
    /// The remote tip was already in the local history (the local ref is ahead).
    LocalAhead,
    /// The local ref was missing or behind and was moved to the remote tip.
    FastForward,
    /// A merge commit joined both histories.
    Merged,
}

/// The outcome of a local merge step: what was done and the local tip afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// What was done.
    pub action: MergeAction,
    /// The local tip afterwards.
    pub tip: Oid,
    /// How many annotated objects the merge commit changed (0 unless `action` is `Merged`).
    pub objects_changed: usize,
    /// (object, entry id) pairs that both sides held with different bytes; both were kept.
    pub conflicts: Vec<(Oid, EntryId)>,
}

/// An entry id that two clones hold with different bytes on one object: the merge kept both
/// versions (see [`union_notes`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryConflict {
    /// The notes ref.
    pub notes_ref: NotesRef,
    /// The annotated object.
    pub object: Oid,
    /// The entry id.
    pub id: EntryId,
}

/// What the sync did to the permanent-state branch (see [`sync_all`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StateReport {
    /// The state ref, for example `refs/heads/squad-state`.
    pub ref_name: String,
    /// `true` when the remote's state brought something new (fast-forward or merge).
    pub fetched: bool,
    /// `true` when a merge commit joined both histories.
    pub merged: bool,
    /// `true` when the push changed the remote's state ref.
    pub pushed: bool,
    /// The local tip afterwards (`None` when neither side has the branch).
    pub tip: Option<String>,
}

impl StateReport {
    /// Records what a merge of the remote's state did.
    fn record(&mut self, action: MergeAction) {
        match action {
            MergeAction::FastForward => self.fetched = true,
            MergeAction::Merged => {
                self.fetched = true;
                self.merged = true;
            }
            _ => {}
        }
    }
}

/// What [`sync`] did, per ref and in total.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyncReport {
    /// Refs for which the remote brought notes the clone did not have (fast-forwarded or merged).
    pub fetched: usize,
    /// Refs joined by a merge commit.
    pub merged: usize,
    /// Refs whose remote value was changed by the push.
    pub pushed: usize,
    /// Squad refs seen on either side.
    pub refs: usize,
    /// Rounds of fetch, merge and push (more than 1 when a push lost a race).
    pub rounds: u32,
    /// The local tip of every squad ref after the sync.
    pub tips: BTreeMap<NotesRef, Oid>,
    /// Entry ids that both sides held with different bytes; both versions were kept.
    pub conflicts: Vec<EntryConflict>,
    /// The permanent-state branch, when it was synced too ([`sync_all`]).
    pub state: Option<StateReport>,
}

/// A step of a sync, for [`sync_all`]'s progress callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SyncStage {
    /// Fetching from the remote (round `done`).
    Fetch,
    /// Merging: `done` of `total` refs.
    Merge,
    /// Pushing `total` refs.
    Push,
}

/// One progress report of a sync. Within one sync, `done` of a stage never goes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncProgress {
    /// The step.
    pub stage: SyncStage,
    /// Units done so far in this step (refs merged, rounds fetched, refs pushed).
    pub done: u64,
    /// Units in all, when known.
    pub total: Option<u64>,
}

/// A permanent-state branch that [`sync_all`] carries alongside the notes: fetched into
/// `refs/remotes/<remote>/<branch>`, merged, pushed with a lease.
///
/// Implemented by [`OrphanBranchStore`](crate::state::OrphanBranchStore) (feature `gix`),
/// whose merge joins the squad's files by entry id ([`crate::promote::merge_state_file`]).
pub trait StateBranch: Send + Sync + std::fmt::Debug {
    /// The full ref name, under `refs/heads/` (for example `refs/heads/squad-state`).
    fn ref_name(&self) -> &str;
    /// The local tip, `None` before the first write.
    fn tip(&self) -> Result<Option<String>>;
    /// `true` when `ancestor` is `descendant` or one of its ancestors.
    fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool>;
    /// Joins the fetched tip `theirs` (named `source` in messages) into the local branch, as
    /// [`merge_remote`] does for notes: the local ref only moves to a commit that contains it.
    fn merge_remote(&self, theirs: &str, source: &str) -> Result<MergeAction>;
}

/// Syncs every squad notes ref with `remote`, with the default [`SyncOptions`].
///
/// `backend` must read the object store the transport fetches into (for git: the same
/// repository), since the merge reads the fetched tips through it.
///
/// # Errors
///
/// - [`ErrorKind::InvalidInput`] for a bad remote name, [`ErrorKind::NotFound`] for an unknown
///   remote (nothing changed in either case).
/// - [`ErrorKind::Conflict`] when every round lost its push race; what was merged locally stays
///   (it only adds notes) and the next sync pushes it.
/// - [`ErrorKind::Backend`] when the remote is unreachable or refuses a push for another reason
///   (a hook, a protected ref).
/// - [`ErrorKind::Unsupported`] when the backend cannot merge.
///
/// ```no_run
/// use squad_notes::GixNotes;
/// use squad_notes::transport::GitCliTransport;
///
/// # fn main() -> squad_notes::Result<()> {
/// let backend = GixNotes::discover(".".as_ref())?;
/// let transport = GitCliTransport::new(".");
/// let report = squad_notes::sync::sync(&backend, &transport, "origin")?;
/// println!("fetched {} merged {} pushed {}", report.fetched, report.merged, report.pushed);
/// # Ok(()) }
/// ```
pub fn sync<B, T>(backend: &B, transport: &T, remote: &str) -> Result<SyncReport>
where
    B: NotesBackend + ?Sized,
    T: Transport + ?Sized,
{
    sync_with(backend, transport, remote, &SyncOptions::default())
}

/// [`sync`] with explicit retry options.
///
/// # Errors
///
/// As [`sync`].
pub fn sync_with<B, T>(
    backend: &B,
    transport: &T,
    remote: &str,
    options: &SyncOptions,
) -> Result<SyncReport>
where
    B: NotesBackend + ?Sized,
    T: Transport + ?Sized,
{
    sync_all(backend, None, transport, remote, options, &|_| {})
}

/// [`sync_with`], plus the permanent-state branch `state` when given, and a progress callback.
///
/// The state branch goes through the same rounds as the notes refs, in the same fetch and the
/// same push: its remote value is fetched into `refs/remotes/<remote>/<branch>` (a missing
/// remote branch is not an error), merged with [`StateBranch::merge_remote`], and pushed with a
/// lease equal to what the fetch saw. So promotions made in several clones converge: after the
/// syncs every clone and the remote hold the same state commit.
///
/// `progress` is called as the sync goes: the round fetched, the refs merged so far, the refs
/// pushed; each stage's `done` only grows.
///
/// # Errors
///
/// As [`sync`].
pub fn sync_all<B, T>(
    backend: &B,
    state: Option<&dyn StateBranch>,
    transport: &T,
    remote: &str,
    options: &SyncOptions,
    progress: &dyn Fn(SyncProgress),
) -> Result<SyncReport>
where
    B: NotesBackend + ?Sized,
    T: Transport + ?Sized,
{
    let _span = tracing::info_span!("notes.sync", remote).entered();
    let tracking_prefix = format!("refs/notes/remotes/{remote}/squad/");
    let state_refs = state.map(|s| state_refspec(s, remote)).transpose()?;
    let mut refspecs = vec![FetchRefspec::notes(remote)];
    if let Some((spec, _)) = &state_refs {
        refspecs.push(spec.clone());
    }
    let mut brought: BTreeSet<NotesRef> = BTreeSet::new();
    let mut merged: BTreeSet<NotesRef> = BTreeSet::new();
    let mut pushed: BTreeSet<NotesRef> = BTreeSet::new();
    let mut seen: BTreeSet<NotesRef> = BTreeSet::new();
    let mut conflicts: BTreeSet<EntryConflict> = BTreeSet::new();
    let mut state_report = state.map(|s| StateReport {
        ref_name: s.ref_name().to_owned(),
        ..StateReport::default()
    });
    let mut merged_so_far = 0u64;
    let rounds = options.retry.max_attempts.max(1);
    for round in 0..rounds {
        progress(SyncProgress {
            stage: SyncStage::Fetch,
            done: u64::from(round) + 1,
            total: None,
        });
        let tracking = transport.fetch(remote, &refspecs)?;
        let mut remote_tips: HashMap<NotesRef, Oid> = HashMap::new();
        let mut sources: BTreeMap<NotesRef, String> = BTreeMap::new();
        let mut remote_state: Option<String> = None;
        for t in tracking {
            if let Some((_, tracking_name)) = &state_refs
                && &t.name == tracking_name
            {
                remote_state = Some(t.oid);
                continue;
            }
            let Some(rest) = t.name.strip_prefix(&tracking_prefix) else {
                continue;
            };
            let local = NotesRef::new(&format!("{SQUAD_PREFIX}{rest}"))?;
            remote_tips.insert(local.clone(), Oid::new(&t.oid)?);
            sources.insert(local, t.name);
        }
        let total = sources.len() as u64 + u64::from(state.is_some());
        let mut merged_this_round = 0u64;
        // One more ref merged this round; `done` never goes back across rounds.
        let mut merge_progress = || {
            merged_this_round += 1;
            merged_so_far = merged_so_far.max(merged_this_round);
            progress(SyncProgress {
                stage: SyncStage::Merge,
                done: merged_so_far,
                total: Some(total.max(merged_so_far)),
            });
        };
        for (name, source) in &sources {
            let outcome = merge_remote(
                backend,
                name,
                &remote_tips[name],
                source,
                &options.local_retry,
            )?;
            conflicts.extend(
                outcome
                    .conflicts
                    .into_iter()
                    .map(|(object, id)| EntryConflict {
                        notes_ref: name.clone(),
                        object,
                        id,
                    }),
            );
            match outcome.action {
                MergeAction::FastForward => {
                    brought.insert(name.clone());
                }
                MergeAction::Merged => {
                    brought.insert(name.clone());
                    merged.insert(name.clone());
                }
                _ => {}
            }
            merge_progress();
        }
        let mut updates = Vec::new();
        let mut stale = false;
        if let (Some(state), Some((_, tracking_name)), Some(report)) =
            (state, &state_refs, state_report.as_mut())
        {
            if let Some(theirs) = &remote_state {
                report.record(state.merge_remote(theirs, tracking_name)?);
            }
            merge_progress();
            if let Some(tip) = state.tip()?
                && remote_state.as_ref() != Some(&tip)
            {
                match &remote_state {
                    Some(theirs) if !state.is_ancestor(theirs, &tip)? => stale = true,
                    _ => updates.push(PushUpdate::same_name(
                        state.ref_name(),
                        remote_state.clone(),
                    )),
                }
            }
        }
        let local = backend.list_refs(SQUAD_PREFIX)?;
        seen.extend(remote_tips.keys().cloned());
        seen.extend(local.iter().map(|(n, _)| n.clone()));
        for (name, tip) in &local {
            let theirs = remote_tips.get(name);
            if theirs == Some(tip) {
                continue;
            }
            // Push only a tip that contains what the remote has. A writer without
            // compare-and-swap (`git notes` itself) may have replaced the merge meanwhile:
            // merge again in the next round rather than push a tip that drops remote notes.
            if let Some(theirs) = theirs
                && !backend.is_ancestor(theirs, tip)?
            {
                stale = true;
                continue;
            }
            updates.push(PushUpdate::same_name(
                name.as_str(),
                theirs.map(|o| o.as_str().to_owned()),
            ));
        }
        progress(SyncProgress {
            stage: SyncStage::Push,
            done: 0,
            total: Some(updates.len() as u64),
        });
        let results = transport.push(remote, &updates)?;
        let mut accepted = 0u64;
        for result in results {
            let is_state = state.is_some_and(|s| s.ref_name() == result.remote);
            match result.status {
                PushStatus::UpToDate => {}
                PushStatus::StaleLease => stale = true,
                PushStatus::Rejected { reason } if lost_race(&reason) => stale = true,
                PushStatus::Rejected { reason } => {
                    return Err(Error::new(
                        ErrorKind::Backend,
                        "notes.sync",
                        format!("{remote} refused the push of {}: {reason}", result.remote),
                    ));
                }
                _ if is_state => {
                    if let Some(report) = state_report.as_mut() {
                        report.pushed = true;
                    }
                    accepted += 1;
                }
                _ => {
                    pushed.insert(NotesRef::new(&result.remote)?);
                    accepted += 1;
                }
            }
        }
        progress(SyncProgress {
            stage: SyncStage::Push,
            done: accepted,
            total: Some(updates.len() as u64),
        });
        if !stale {
            let tips = backend.list_refs(SQUAD_PREFIX)?.into_iter().collect();
            if let (Some(state), Some(report)) = (state, state_report.as_mut()) {
                report.tip = state.tip()?;
            }
            tracing::info!(
                fetched = brought.len(),
                merged = merged.len(),
                pushed = pushed.len(),
                rounds = round + 1,
                conflicts = conflicts.len(),
                "notes synced"
            );
            return Ok(SyncReport {
                fetched: brought.len(),
                merged: merged.len(),
                pushed: pushed.len(),
                refs: seen.len(),
                rounds: round + 1,
                tips,
                conflicts: conflicts.into_iter().collect(),
                state: state_report,
            });
        }
        tracing::debug!(round, "the remote moved during the sync; another round");
        backoff(&options.retry, round);
    }
    Err(Error::new(
        ErrorKind::Conflict,
        "notes.sync",
        format!(
            "{remote} kept moving: every push lost its race in {rounds} rounds; \
             the merged notes are kept locally, run the sync again"
        ),
    ))
}

/// Fetches the remote's state branch into its tracking ref and merges it into the local branch,
/// without pushing: what `squad notes promote` does first, so that a clone that is behind sees
/// the promotions made elsewhere and does not promote them again. A remote without the branch
/// is not an error (nothing changes).
///
/// # Errors
///
/// As [`sync`] (an unknown or unreachable remote, a bad name), and the errors of
/// [`StateBranch::merge_remote`].
pub fn pull_state<T: Transport + ?Sized>(
    state: &dyn StateBranch,
    transport: &T,
    remote: &str,
) -> Result<StateReport> {
    let (spec, tracking_name) = state_refspec(state, remote)?;
    let mut report = StateReport {
        ref_name: state.ref_name().to_owned(),
        ..StateReport::default()
    };
    let tracking = transport.fetch(remote, &[spec])?;
    if let Some(theirs) = tracking.into_iter().find(|t| t.name == tracking_name) {
        report.record(state.merge_remote(&theirs.oid, &tracking_name)?);
    }
    report.tip = state.tip()?;
    Ok(report)
}

/// The fetch refspec of a state branch (a glob, so that a remote without the branch is not an
/// error) and the tracking ref it fills.
fn state_refspec(state: &dyn StateBranch, remote: &str) -> Result<(FetchRefspec, String)> {
    let Some(branch) = state.ref_name().strip_prefix("refs/heads/") else {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "notes.sync",
            format!(
                "cannot sync the state ref {}: only branches (refs/heads/…) are synced",
                state.ref_name()
            ),
        ));
    };
    let tracking = format!("refs/remotes/{remote}/{branch}");
    Ok((
        FetchRefspec::new(format!("refs/heads/{branch}*"), format!("{tracking}*")),
        tracking,
    ))
}

/// Merges the tip `remote` (of another clone, already in the object store; `source` names it in
/// the merge message, for example its tracking ref) into the local ref `notes_ref`:
/// fast-forward when possible, otherwise a merge commit holding the union by entry id of both
/// sides. Retries when a local writer moves the ref meanwhile.
///
/// # Errors
///
/// [`ErrorKind::Conflict`] when local writers won every attempt of `retry`; backend errors as
/// they come. Nothing is lost in any case: the local ref only ever moves to a tip that contains
/// its previous value.
pub fn merge_remote<B: NotesBackend + ?Sized>(
    backend: &B,
    notes_ref: &NotesRef,
    remote: &Oid,
    source: &str,
    retry: &RetryPolicy,
) -> Result<Merged> {
    let attempts = retry.max_attempts.max(1);
    let mut last = None;
    for attempt in 0..attempts {
        match merge_once(backend, notes_ref, remote, source) {
            Err(e) if e.kind() == ErrorKind::Conflict => {
                last = Some(e);
                backoff(retry, attempt);
            }
            other => return other,
        }
    }
    Err(last.unwrap_or_else(|| Error::new(ErrorKind::Conflict, "notes.merge", "no attempt made")))
}

fn merge_once<B: NotesBackend + ?Sized>(
    backend: &B,
    notes_ref: &NotesRef,
    remote: &Oid,
    source: &str,
) -> Result<Merged> {
    let done = |action, tip: &Oid| Merged {
        action,
        tip: tip.clone(),
        objects_changed: 0,
        conflicts: Vec::new(),
    };
    let Some(local) = backend.tip(notes_ref)? else {
        backend.fast_forward(notes_ref, None, remote)?;
        return Ok(done(MergeAction::FastForward, remote));
    };
    if &local == remote {
        return Ok(done(MergeAction::UpToDate, &local));
    }
    if backend.is_ancestor(remote, &local)? {
        return Ok(done(MergeAction::LocalAhead, &local));
    }
    if backend.is_ancestor(&local, remote)? {
        backend.fast_forward(notes_ref, Some(&local), remote)?;
        return Ok(done(MergeAction::FastForward, remote));
    }
    let (edits, conflicts) = union_edits(backend, &local, remote)?;
    // git's message for a notes merge.
    let message = format!("Merged notes from {source} into {notes_ref}\n");
    let tip = backend.merge(notes_ref, &local, remote, &edits, &message)?;
    Ok(Merged {
        action: MergeAction::Merged,
        tip,
        objects_changed: edits.len(),
        conflicts,
    })
}

/// The edits that turn the notes at `local` into the union of `local` and `remote`, and the
/// entry ids both sides hold with different bytes.
#[expect(clippy::type_complexity, reason = "a private pair of results")]
pub(crate) fn union_edits<B: NotesBackend + ?Sized>(
    backend: &B,
    local: &Oid,
    remote: &Oid,
) -> Result<(Vec<NoteEdit>, Vec<(Oid, EntryId)>)> {
    let ours: HashMap<Oid, Vec<u8>> = backend.read_all(local)?.into_iter().collect();
    let mut edits = Vec::new();
    let mut conflicts = Vec::new();
    for (object, theirs) in backend.read_all(remote)? {
        match ours.get(&object) {
            None => edits.push(NoteEdit::set(object, theirs)),
            Some(mine) if *mine == theirs => {}
            Some(mine) => {
                let joined = union_notes(mine, &theirs);
                conflicts.extend(joined.conflicts.into_iter().map(|id| (object.clone(), id)));
                if joined.bytes != *mine {
                    edits.push(NoteEdit::set(object, joined.bytes));
                }
            }
        }
    }
    Ok((edits, conflicts))
}

/// `true` for a push refused because another push updated the remote ref at the same moment:
/// the lease passed on our side, but the remote's own compare-and-swap under its ref lock failed
/// (`[remote rejected] (failed to update ref)`, `cannot lock ref …`).
fn lost_race(reason: &str) -> bool {
    [
        "failed to update ref",
        "cannot lock ref",
        "failed to lock",
        "incorrect old value",
    ]
    .iter()
    .any(|r| reason.contains(r))
}

fn backoff(policy: &RetryPolicy, attempt: u32) {
    let ceiling = policy
        .base
        .saturating_mul(1u32 << attempt.min(16))
        .min(policy.cap);
    let micros = u64::try_from(ceiling.as_micros()).unwrap_or(u64::MAX);
    let pause = rand::rngs::StdRng::from_os_rng().random_range(0..=micros);
    std::thread::sleep(Duration::from_micros(pause));
}
