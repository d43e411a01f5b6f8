//! One way to spread bulk work over a few threads: contiguous chunks, results in input order.

use crate::error::{Error, ErrorKind, Result};

/// Inputs shorter than this are handled on the calling thread.
pub(crate) const PARALLEL_MIN: usize = 512;

/// How many threads bulk work uses: the machine's parallelism, at most 4.
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
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
    let threads = threads();
    if items.len() < min.max(2) || threads < 2 {
        return work(items);
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
        // One allocation of the exact size: the parts may hold far more than `items`.
        let mut out = Vec::with_capacity(parts.iter().map(Vec::len).sum());
        for part in parts {
            out.extend(part);
        }
        Ok(out)
    })
}
