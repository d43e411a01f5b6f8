//! Time, injectable: the system clock for hosts, a fixed clock for tests.

use std::sync::atomic::{AtomicI64, Ordering};

use squad_model::Timestamp;

/// A source of the current time.
///
/// # Contract
///
/// `now` returns UTC time and never goes backwards between two calls on the same clock unless
/// the host moves it (tests). Gate expiry and decision times are read from it, so a fixed clock
/// makes every test deterministic.
///
/// # Implementing
///
/// Implement `now`; nothing else. The library never sleeps: waiting is the host's job.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that stays where it is put (milliseconds since the epoch).
///
/// ```
/// use squad_notify::{Clock, FixedClock};
///
/// let c = FixedClock::at_unix_seconds(1_800_000_000);
/// c.advance_seconds(60);
/// assert_eq!(c.now().unix_seconds(), 1_800_000_060);
/// ```
#[derive(Debug, Default)]
pub struct FixedClock {
    millis: AtomicI64,
}

impl FixedClock {
    /// A clock at `secs` seconds since the Unix epoch.
    pub fn at_unix_seconds(secs: i64) -> Self {
        Self {
            millis: AtomicI64::new(secs.saturating_mul(1000)),
        }
    }

    /// Moves the clock by `secs` seconds.
    pub fn advance_seconds(&self, secs: i64) {
        self.millis
            .fetch_add(secs.saturating_mul(1000), Ordering::SeqCst);
    }

    /// Sets the clock.
    pub fn set(&self, t: Timestamp) {
        self.millis.store(t.unix_millis(), Ordering::SeqCst);
    }
}

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        let ms = self.millis.load(Ordering::SeqCst);
        Timestamp::from_unix_millis(ms).unwrap_or_else(|_| Timestamp::now())
    }
}
