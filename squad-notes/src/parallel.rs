//! One way to spread bulk work over a few threads: contiguous chunks, results in input order.

use crate::error::{Error, ErrorKind, Result};

/// Inputs shorter than this are handled on the calling thread.
pub(crate) const PARALLEL_MIN: usize = 512;

/// How many threads bulk work uses: the machine's parallelism, at most 4. Asked once per
/// process: on Linux the answer reads the cgroup's CPU quota from `/proc` and `/sys` (three
/// files), and a `notes list` runs some twenty bulk steps.
pub(crate) fn threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(4)))
}

/// Runs `work` on contiguous chunks of `items`, one per thread (on the calling thread alone
/// when `items` is shorter than `min` or the machine has one core), and concatenates the
/// results in input order. The first error wins; a panicking thread is a backend error of `op`.
pub(crate) fn map_chunks<T: Sync, U: Send>(
    items: &[T],
    min: usize,
    op: &'static str,
    work: impl Fn(&[T]) -> Result<Vec<U>> + Sync,
) -> Result<Vec<U>> {
    let mut parts = map_parts(items, min, op, work)?;
    if parts.len() == 1 {
        return Ok(parts.pop().unwrap_or_default());
    }
    // One allocation of the exact size: the parts may hold far more than `items`.
    let mut out = Vec::with_capacity(parts.iter().map(Vec::len).sum());
    for part in parts {
        out.extend(part);
    }
    Ok(out)
}

/// [`map_chunks`] without the concatenation: each chunk's results, in input order (one part
/// when the work ran on the calling thread), for a caller that moves them on anyway.
pub(crate) fn map_parts<T: Sync, U: Send>(
    items: &[T],
    min: usize,
    op: &'static str,
    work: impl Fn(&[T]) -> Result<Vec<U>> + Sync,
) -> Result<Vec<Vec<U>>> {
    let threads = threads();
    if items.len() < min.max(2) || threads < 2 {
        return Ok(vec![work(items)?]);
    }
    let size = items.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let work = &work;
        let handles: Vec<_> = items
            .chunks(size)
            .map(|chunk| scope.spawn(move || work(chunk)))
            .collect();
        let mut parts = Vec::with_capacity(handles.len());
        for h in handles {
            match h.join() {
                Ok(part) => parts.push(part?),
                Err(_) => {
                    return Err(Error::new(
                        ErrorKind::Backend,
                        op,
                        "a worker thread panicked",
                    ));
                }
            }
        }
        Ok(parts)
    })
}
