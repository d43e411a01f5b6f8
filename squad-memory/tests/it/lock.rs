//! The memory lock's ticket queue (`FsStore`): arrival order, waits that run out, dead tickets.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use squad_memory::{Budget, DocRef, Entry, ErrorKind, FsStore, Kind, MemoryStore, add};

use crate::{agent, at};

const WAIT: Duration = Duration::from_secs(30);

fn store(root: &std::path::Path, command: &str) -> FsStore {
    FsStore::new(root)
        .with_lock_wait(WAIT)
        .with_lock_command(command)
}

/// Waits (up to 30 s) until the queue holds `n` tickets.
fn until_queued(store: &FsStore, n: usize) {
    let start = Instant::now();
    while store.lock_queue().unwrap().len() < n {
        assert!(
            start.elapsed() < WAIT,
            "the queue never reached {n} tickets"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn waiters_get_the_lock_in_the_order_they_arrived() {
    let dir = tempfile::tempdir().unwrap();
    let holder = store(dir.path(), "holder");
    let held = holder.lock().unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut threads = Vec::new();
    for i in 0..6 {
        let s = store(dir.path(), &format!("waiter {i}"));
        let order = order.clone();
        threads.push(std::thread::spawn(move || {
            let _l = s.lock().unwrap();
            order.lock().unwrap().push(i);
        }));
        // The next one arrives only once this one is in line.
        until_queued(&holder, i + 2);
    }
    let queue = holder.lock_queue().unwrap();
    let commands: Vec<&str> = queue.iter().map(|t| t.command.as_str()).collect();
    assert_eq!(
        commands,
        [
            "holder", "waiter 0", "waiter 1", "waiter 2", "waiter 3", "waiter 4", "waiter 5"
        ]
    );
    assert!(queue.iter().all(|t| t.alive && t.pid == std::process::id()));
    assert!(queue.windows(2).all(|w| w[0].seq < w[1].seq));
    drop(held);
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3, 4, 5]);
    assert!(
        holder.lock_queue().unwrap().is_empty(),
        "every ticket is gone"
    );
}

#[test]
fn a_wait_that_runs_out_names_the_holder_and_leaves_no_ticket() {
    let dir = tempfile::tempdir().unwrap();
    let scribe = store(dir.path(), "squad memory scribe --agent data");
    let held = scribe.lock().unwrap();
    let adder = FsStore::new(dir.path())
        .with_lock_wait(Duration::from_millis(300))
        .with_lock_command("squad memory add --agent data");
    let start = Instant::now();
    let err = adder.lock().unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert_eq!(err.kind(), ErrorKind::Locked);
    let text = err.to_string();
    assert!(
        text.contains(&format!(
            "held by `squad memory scribe --agent data` (pid {})",
            std::process::id()
        )),
        "{text}"
    );
    assert_eq!(text.lines().count(), 1, "{text}");
    assert_eq!(
        scribe.lock_queue().unwrap().len(),
        1,
        "the waiter that gave up left its ticket behind"
    );
    // With no wait, it gives up at once, and says so.
    let err = FsStore::new(dir.path()).lock().unwrap_err();
    assert!(err.to_string().contains("did not wait"), "{err}");
    drop(held);
    adder.lock().unwrap();
}

#[test]
fn a_dead_ticket_blocks_nobody_and_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("memory/.lock-queue");
    std::fs::create_dir_all(&q).unwrap();
    // What a waiter killed with SIGKILL leaves: its ticket file, which no process locks.
    let dead = q.join("00000000000000000007-999999");
    std::fs::write(&dead, "999999\t1700000000\tsquad memory add --agent data\n").unwrap();
    let s = FsStore::new(dir.path());
    let queue = s.lock_queue().unwrap();
    assert_eq!(queue.len(), 1);
    assert!(!queue[0].alive);
    assert_eq!(
        (queue[0].seq, queue[0].pid, queue[0].command.as_str()),
        (7, 999_999, "squad memory add --agent data")
    );
    // No wait at all, yet the lock is taken: the dead ticket ahead does not count.
    let held = s.lock().unwrap();
    assert!(!dead.exists(), "the next writer removes the dead ticket");
    let queue = s.lock_queue().unwrap();
    assert_eq!(queue.len(), 1);
    assert!(queue[0].seq > 7 && queue[0].alive);
    drop(held);
}

#[test]
fn remove_dead_tickets_keeps_the_live_ones() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), "live");
    let held = s.lock().unwrap();
    let q = dir.path().join("memory/.lock-queue");
    std::fs::write(q.join("00000000000000000099-999999"), "").unwrap();
    // Files that are not tickets are not touched.
    std::fs::write(q.join("notes.txt"), "mine").unwrap();
    let removed = s.remove_dead_tickets().unwrap();
    assert_eq!(removed.len(), 1);
    assert_eq!((removed[0].seq, removed[0].pid), (99, 999_999));
    let left = s.lock_queue().unwrap();
    assert_eq!(left.len(), 1);
    assert!(left[0].alive && left[0].command == "live");
    assert!(q.join("notes.txt").exists());
    drop(held);
    assert!(s.remove_dead_tickets().unwrap().is_empty());
}

#[test]
fn sixteen_concurrent_adds_all_land_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let who = agent("data");
    let threads: Vec<_> = (0..16)
        .map(|i| {
            let s = store(dir.path(), &format!("add {i}"));
            let who = who.clone();
            std::thread::spawn(move || {
                let e = Entry::new(at("2026-11-30T10:00:00Z"), Kind::Note, format!("entry {i}"));
                add(&s, &who, e, &Budget::default()).unwrap()
            })
        })
        .collect();
    let added: Vec<Entry> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let hot = FsStore::new(dir.path())
        .read(&DocRef::Hot(who))
        .unwrap()
        .unwrap();
    for i in 0..16 {
        assert_eq!(
            hot.matches(&format!("note: entry {i}\n")).count(),
            1,
            "entry {i}"
        );
    }
    // Each add reports the line its heading is on in the file.
    let lines: Vec<&str> = hot.lines().collect();
    for e in &added {
        assert!(e.line >= 1, "{e:?}");
        assert!(lines[e.line - 1].ends_with(&e.title), "{e:?}");
    }
}

#[test]
fn an_endless_wait_is_cut_to_an_hour_without_overflow() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing to observe but that it is accepted and the lock works: the cut keeps a deadline
    // computable for any Duration.
    let s = FsStore::new(dir.path()).with_lock_wait(Duration::MAX);
    drop(s.lock().unwrap());
    assert_eq!(squad_memory::MAX_LOCK_WAIT, Duration::from_secs(3600));
}
