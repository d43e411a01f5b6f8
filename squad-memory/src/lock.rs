//! The memory lock of [`FsStore`](crate::FsStore): a first-come, first-served ticket queue in the
//! state directory, so that many writers (`memory add` from many agents, a Scribe, an import)
//! take turns in the order they arrived instead of failing.
//!
//! # How it works
//!
//! - A writer takes a **ticket**: under a short-lived advisory lock on `memory/.lock-queue.lock`
//!   it creates `memory/.lock-queue/<seq>-<pid>` with the next sequence number (one more than
//!   the largest ticket present), takes an exclusive advisory lock on that file, and writes who
//!   it is (pid, start time, command) into it. Creating and locking happen before the next
//!   writer can number its own ticket, so a ticket anyone looks at is already locked.
//! - The writer **holds the lock** once no ticket with a smaller number is alive. A ticket is
//!   alive while its file's advisory lock is held: the lock dies with its process, so a waiter
//!   killed with SIGKILL leaves a file whose lock anyone can take. Whoever finds such a dead
//!   ticket ahead of it removes it, and `squad doctor --fix` removes the ones nobody met.
//! - Holding the lock also takes the advisory lock on `memory/.scribe.lock` (what earlier
//!   versions took alone), so a writer of an earlier version still excludes and is excluded.
//! - Releasing: drop `.scribe.lock`, remove the ticket file, then unlock it.
//!
//! The waiter next in line looks again every 2 ms at most, one further back less often (2 ms
//! per ticket ahead of it, up to 40 ms); it gives up when its wait runs out, removing
//! its ticket, with [`ErrorKind::Locked`] naming the command and pid of the holder.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use squad_fs::{EntryKind, Lock, StateDir};

use crate::error::{Error, ErrorKind, Result};
use crate::store::fs_error;

/// The directory of tickets, below the state root.
pub(crate) const QUEUE_DIR: &str = "memory/.lock-queue";
/// The lock taken while a ticket is numbered and created.
const NUMBERING_LOCK: &str = "memory/.lock-queue.lock";
/// The lock the holder takes too (the only lock of earlier versions).
pub(crate) const SCRIBE_LOCK: &str = "memory/.scribe.lock";

/// The longest wait a [`FsStore`](crate::FsStore) accepts (one hour).
pub const MAX_LOCK_WAIT: Duration = Duration::from_secs(3600);

/// Fastest and slowest pause between two looks at the queue, for the waiter next in line.
const FIRST_PAUSE: Duration = Duration::from_micros(500);
const LAST_PAUSE: Duration = Duration::from_millis(2);
/// The longest pause of a waiter further back: it pauses [`LAST_PAUSE`] per ticket between it
/// and the holder, up to this, so that a long line does not spend the CPU the holder needs.
const FAR_PAUSE: Duration = Duration::from_millis(40);

/// One ticket in the memory lock's queue ([`FsStore::lock_queue`](crate::FsStore::lock_queue)).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Ticket {
    /// Its place in the queue: smaller numbers came first.
    pub seq: u64,
    /// The process that took it.
    pub pid: u32,
    /// What that process said it runs (`squad memory add --agent data`), empty when unknown.
    pub command: String,
    /// When it was taken (seconds since the Unix epoch), when recorded.
    pub since: Option<u64>,
    /// Whether its process still holds it; a dead ticket blocks nobody and is removed by the
    /// next waiter that meets it, or by [`FsStore::remove_dead_tickets`](crate::FsStore::remove_dead_tickets).
    pub alive: bool,
    /// Its file, relative to the state directory.
    pub path: String,
}

impl Ticket {
    /// `squad memory add --agent data (pid 4242)`, or `pid 4242` without a command.
    pub fn holder(&self) -> String {
        if self.command.is_empty() {
            format!("pid {}", self.pid)
        } else {
            format!("`{}` (pid {})", self.command, self.pid)
        }
    }
}

fn ticket_name(seq: u64, pid: u32) -> String {
    format!("{seq:020}-{pid}")
}

/// `(seq, pid)` of a ticket file name.
fn parse_name(name: &str) -> Option<(u64, u32)> {
    let (seq, pid) = name.split_once('-')?;
    if seq.len() != 20 || !seq.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((seq.parse().ok()?, pid.parse().ok()?))
}

/// One line: `<pid>\t<since>\t<command>`, the command with control characters replaced.
fn ticket_text(pid: u32, command: &str) -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let command: String = command
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!("{pid}\t{since}\t{command}\n")
}

fn parse_text(text: &str) -> (Option<u64>, String) {
    let mut parts = text.trim_end_matches('\n').splitn(3, '\t');
    let _pid = parts.next();
    let since = parts.next().and_then(|s| s.parse().ok());
    let command = parts.next().unwrap_or("").to_owned();
    (since, command)
}

/// The ticket files present, sorted by number.
fn present(state: &StateDir) -> Result<Vec<(u64, u32, String)>> {
    let entries = state
        .list(QUEUE_DIR)
        .map_err(|e| fs_error(state, "memory.lock", ".lock-queue", e))?;
    let mut out: Vec<(u64, u32, String)> = entries
        .into_iter()
        .filter(|e| e.kind == EntryKind::File)
        .filter_map(|e| parse_name(&e.name).map(|(s, p)| (s, p, e.name)))
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// What probing a ticket found.
enum Probe {
    /// Its process holds it.
    Alive,
    /// Nobody held it (its process is gone): the file has been removed.
    Removed,
}

/// Looks whether the ticket `name` is alive; removes it when it is not. Only call this for a
/// ticket numbered before one's own, or while holding the numbering lock: such a ticket was
/// locked when it was created.
fn probe(state: &StateDir, name: &str) -> Result<Probe> {
    let rel = format!("{QUEUE_DIR}/{name}");
    if state
        .kind(&rel)
        .map_err(|e| fs_error(state, "memory.lock", ".lock-queue", e))?
        .is_none()
    {
        return Ok(Probe::Removed);
    }
    match state
        .try_lock(&rel)
        .map_err(|e| fs_error(state, "memory.lock", ".lock-queue", e))?
    {
        None => Ok(Probe::Alive),
        Some(lock) => {
            // Its owner is gone (or finished between our two looks): the file goes, then the
            // lock we took on it.
            let _ = state.remove_unsynced(&rel);
            drop(lock);
            Ok(Probe::Removed)
        }
    }
}

/// A held place in the queue; removed and unlocked on drop.
#[derive(Debug)]
pub(crate) struct Held {
    state: StateDir,
    rel: String,
    scribe: Option<Lock>,
    ticket: Option<Lock>,
}

impl Drop for Held {
    fn drop(&mut self) {
        drop(self.scribe.take());
        let _ = self.state.remove_unsynced(&self.rel);
        drop(self.ticket.take());
    }
}

/// Takes the numbering lock, waiting until `deadline` at most.
fn numbering(state: &StateDir, deadline: Instant) -> Result<Option<Lock>> {
    let mut pause = FIRST_PAUSE;
    loop {
        match state
            .try_lock(NUMBERING_LOCK)
            .map_err(|e| fs_error(state, "memory.lock", ".lock-queue.lock", e))?
        {
            Some(l) => return Ok(Some(l)),
            None if Instant::now() >= deadline => return Ok(None),
            None => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(LAST_PAUSE);
            }
        }
    }
}

/// Takes a ticket: the next number, the file created and locked, who we are written in it.
fn take_ticket(state: &StateDir, command: &str, deadline: Instant) -> Result<Option<Held>> {
    // Numbering takes microseconds; the extra second only matters for a stopped process.
    let Some(_numbering) = numbering(state, deadline.max(Instant::now() + Duration::from_secs(1)))?
    else {
        return Ok(None);
    };
    let pid = std::process::id();
    let seq = present(state)?
        .last()
        .map_or(1, |(s, _, _)| s.saturating_add(1));
    let rel = format!("{QUEUE_DIR}/{}", ticket_name(seq, pid));
    let ticket = state
        .try_lock(&rel)
        .map_err(|e| fs_error(state, "memory.lock", ".lock-queue", e))?
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Backend,
                "memory.lock",
                format!("the new lock ticket {rel} is locked by another process"),
            )
        })?;
    let held = Held {
        state: state.clone(),
        rel: rel.clone(),
        scribe: None,
        ticket: Some(ticket),
    };
    state
        .append_unsynced(&rel, ticket_text(pid, command).as_bytes())
        .map_err(|e| fs_error(state, "memory.lock", ".lock-queue", e))?;
    Ok(Some(held))
}

/// Waits for the memory lock in arrival order, up to `wait`; `command` names the caller in the
/// ticket (what a waiter that gives up reports).
pub(crate) fn acquire(state: &StateDir, command: &str, wait: Duration) -> Result<Held> {
    let started = Instant::now();
    let deadline = started + wait.min(MAX_LOCK_WAIT);
    let Some(mut held) = take_ticket(state, command, deadline)? else {
        return Err(Error::new(
            ErrorKind::Locked,
            "memory.lock",
            format!(
                "{NUMBERING_LOCK} stays locked (a stopped process?); could not join the queue for the memory lock"
            ),
        ));
    };
    let mine = held
        .rel
        .rsplit('/')
        .next()
        .and_then(parse_name)
        .map_or(0, |(s, _)| s);
    let mut pause = FIRST_PAUSE;
    let mut logged = false;
    loop {
        // Tickets ahead of ours, nearest first: the nearest is usually alive, so one probe
        // per look is the common case.
        let ahead: Vec<(u64, u32, String)> = present(state)?
            .into_iter()
            .filter(|(s, _, _)| *s < mine)
            .collect();
        let mut blocked = false;
        for (_, _, name) in ahead.iter().rev() {
            if let Probe::Alive = probe(state, name)? {
                blocked = true;
                break;
            }
        }
        // Once no one is ahead, `.scribe.lock` is ours unless a writer of an earlier version,
        // which takes no ticket, holds it: then we wait as for anyone else.
        if !blocked
            && let Some(l) = state
                .try_lock(SCRIBE_LOCK)
                .map_err(|e| fs_error(state, "memory.lock", ".scribe.lock", e))?
        {
            held.scribe = Some(l);
            tracing::debug!(
                waited_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                "memory lock taken"
            );
            return Ok(held);
        }
        if !logged {
            tracing::debug!("the memory lock is held by another writer; waiting in line");
            logged = true;
        }
        if Instant::now() >= deadline {
            let ahead = ahead_alive(state, mine)?;
            drop(held);
            return Err(gave_up(wait, &ahead));
        }
        let between = u32::try_from(ahead.len().saturating_sub(1)).unwrap_or(u32::MAX);
        let now = if between == 0 {
            pause
        } else {
            LAST_PAUSE.saturating_mul(between).min(FAR_PAUSE)
        };
        std::thread::sleep(now.min(deadline.saturating_duration_since(Instant::now())));
        pause = (pause * 2).min(LAST_PAUSE);
    }
}

/// The live tickets ahead of `mine`, in order.
fn ahead_alive(state: &StateDir, mine: u64) -> Result<Vec<Ticket>> {
    Ok(list(state)?
        .into_iter()
        .filter(|t| t.seq < mine && t.alive)
        .collect())
}

fn gave_up(wait: Duration, ahead: &[Ticket]) -> Error {
    let waited = match wait.as_secs() {
        0 => "did not wait (a wait of 0 s)".to_owned(),
        1 => "gave up after waiting 1 s".to_owned(),
        n => format!("gave up after waiting {n} s"),
    };
    let message = match ahead.split_first() {
        Some((holder, rest)) => {
            let queue = match rest.len() {
                0 => String::new(),
                1 => "; 1 more writer is waiting ahead".to_owned(),
                n => format!("; {n} more writers are waiting ahead"),
            };
            format!(
                "the memory lock is held by {}{queue}; {waited}",
                holder.holder()
            )
        }
        None => {
            format!(
                "the memory lock is held by a process that took no ticket in {QUEUE_DIR} (an earlier squad version?); {waited}"
            )
        }
    };
    Error::new(ErrorKind::Locked, "memory.lock", message)
}

/// Every ticket present, in queue order, each with whether its process holds it. Probing takes
/// the numbering lock, so a ticket being created is never taken for a dead one; a dead ticket is
/// reported, not removed.
pub(crate) fn list(state: &StateDir) -> Result<Vec<Ticket>> {
    scan(state, false)
}

/// Removes the dead tickets and returns them.
pub(crate) fn remove_dead(state: &StateDir) -> Result<Vec<Ticket>> {
    // Only those actually gone (`scan` removes nothing without the numbering lock).
    Ok(scan(state, true)?
        .into_iter()
        .filter(|t| !t.alive && matches!(state.kind(&t.path), Ok(None)))
        .collect())
}

fn scan(state: &StateDir, remove: bool) -> Result<Vec<Ticket>> {
    let names = present(state)?;
    if names.is_empty() {
        return Ok(Vec::new());
    }
    // Without the numbering lock (held for seconds: a stopped process), a ticket being created
    // may look dead for an instant: report, but remove nothing.
    let numbered = numbering(state, Instant::now() + Duration::from_secs(5))?;
    let remove = remove && numbered.is_some();
    let mut out = Vec::new();
    for (seq, pid, name) in names {
        let rel = format!("{QUEUE_DIR}/{name}");
        let text = match state.read_capped(&rel, 4096) {
            Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            Ok(None) => continue,
            Err(_) => String::new(),
        };
        let (since, command) = parse_text(&text);
        let alive = match state
            .try_lock(&rel)
            .map_err(|e| fs_error(state, "memory.lock", ".lock-queue", e))?
        {
            None => true,
            Some(lock) => {
                if remove {
                    let _ = state.remove_unsynced(&rel);
                }
                drop(lock);
                false
            }
        };
        out.push(Ticket {
            seq,
            pid,
            command,
            since,
            alive,
            path: rel,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_strangers_are_ignored() {
        let n = ticket_name(42, 1234);
        assert_eq!(parse_name(&n), Some((42, 1234)));
        for bad in [
            "",
            "42-1",
            "x0000000000000000042-1",
            "00000000000000000042-",
            "00000000000000000042-1a",
            ".tmp",
        ] {
            assert_eq!(parse_name(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn ticket_text_keeps_one_line() {
        let t = ticket_text(7, "squad memory add\n--title x\ty");
        assert_eq!(t.lines().count(), 1);
        let (since, command) = parse_text(&t);
        assert!(since.is_some());
        assert_eq!(command, "squad memory add --title x y");
    }
}
