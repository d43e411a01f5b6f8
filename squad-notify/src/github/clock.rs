//! Time and sleeping, injected so that waiting can be simulated in tests.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use squad_model::Timestamp;

/// A source of the current time and a way to sleep.
///
/// # Contract
///
/// - `now` never goes backwards between calls on one clock.
/// - `sleep(d)` returns after `d` has passed on this clock (a simulated clock advances itself).
///
/// # Implementing
///
/// Production code uses [`SystemClock`] (tokio timers). Tests implement the trait with a clock
/// that advances on `sleep` without really sleeping, to simulate a day of polling in a second.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> Timestamp;
    /// Waits `duration`.
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// The system clock and tokio's timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }

    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// A small deterministic generator for backoff jitter (splitmix64); not for secrets.
#[derive(Debug, Clone)]
pub(crate) struct Jitter(u64);

impl Jitter {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A duration drawn uniformly from `[low, high]` (millisecond resolution).
    pub(crate) fn between(&mut self, low: Duration, high: Duration) -> Duration {
        let (lo, hi) = (low.as_millis(), high.as_millis().max(low.as_millis()));
        let span = u64::try_from(hi - lo).unwrap_or(u64::MAX).saturating_add(1);
        let pick = u128::from(self.next() % span);
        Duration::from_millis(u64::try_from(lo + pick).unwrap_or(u64::MAX))
    }
}
