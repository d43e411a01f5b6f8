//! Timestamps: RFC 3339, always UTC.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::error::{Error, Result};

/// A point in time, read and written as RFC 3339 in UTC (`2026-03-23T14:00:00Z`).
///
/// Parsing accepts any RFC 3339 timestamp whose offset is zero (`Z`, `+00:00`, `-00:00`) and
/// rejects others, so that every timestamp in the squad's data sorts the same way as text and as
/// time. Formatting always writes `Z`, with fractional seconds only when they are non-zero.
///
/// ```
/// use squad_model::Timestamp;
///
/// let t: Timestamp = "2026-03-23T14:00:00Z".parse()?;
/// assert_eq!(t.to_string(), "2026-03-23T14:00:00Z");
/// assert!("2026-03-23T14:00:00+02:00".parse::<Timestamp>().is_err());
/// assert!("yesterday".parse::<Timestamp>().is_err());
/// # Ok::<(), squad_model::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(OffsetDateTime);

impl Timestamp {
    /// The current time from the system clock.
    pub fn now() -> Self {
        Self(OffsetDateTime::now_utc())
    }

    /// Parses an RFC 3339 UTC timestamp.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTimestamp`] when the text is not RFC 3339 or its offset is not zero.
    pub fn parse(value: &str) -> Result<Self> {
        let t = OffsetDateTime::parse(value, &Rfc3339).map_err(|e| Error::InvalidTimestamp {
            value: value.to_owned(),
            reason: format!("not RFC 3339 ({e})"),
        })?;
        if !t.offset().is_utc() {
            return Err(Error::InvalidTimestamp {
                value: value.to_owned(),
                reason: "offset must be UTC (Z)".to_owned(),
            });
        }
        Ok(Self(t))
    }

    /// Seconds since the Unix epoch, UTC.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTimestamp`] when the value is outside the supported range (years 1 to 9999).
    pub fn from_unix_seconds(secs: i64) -> Result<Self> {
        let t = OffsetDateTime::from_unix_timestamp(secs).map_err(|e| Error::InvalidTimestamp {
            value: secs.to_string(),
            reason: e.to_string(),
        })?;
        Self::checked(t, secs.to_string())
    }

    /// Milliseconds since the Unix epoch, UTC.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTimestamp`] when the value is outside the supported range (years 1 to 9999).
    pub fn from_unix_millis(millis: i64) -> Result<Self> {
        let t = OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000).map_err(
            |e| Error::InvalidTimestamp {
                value: millis.to_string(),
                reason: e.to_string(),
            },
        )?;
        Self::checked(t, millis.to_string())
    }

    fn checked(t: OffsetDateTime, raw: String) -> Result<Self> {
        if (1..=9999).contains(&t.year()) {
            Ok(Self(t))
        } else {
            Err(Error::InvalidTimestamp {
                value: raw,
                reason: "year must be between 1 and 9999".to_owned(),
            })
        }
    }

    /// Seconds since the Unix epoch.
    pub fn unix_seconds(&self) -> i64 {
        self.0.unix_timestamp()
    }

    /// Milliseconds since the Unix epoch (truncated toward negative infinity for pre-epoch times).
    pub fn unix_millis(&self) -> i64 {
        let nanos = self.0.unix_timestamp_nanos();
        i64::try_from(nanos.div_euclid(1_000_000)).unwrap_or(i64::MAX)
    }

    /// This timestamp moved by `secs` seconds (negative moves back), saturating at the range ends.
    pub fn plus_seconds(&self, secs: i64) -> Self {
        self.0
            .checked_add(time::Duration::seconds(secs))
            .filter(|t| (1..=9999).contains(&t.year()))
            .map_or(*self, Self)
    }

    /// Whole seconds from `earlier` to `self` (negative when `earlier` is later).
    pub fn seconds_since(&self, earlier: &Timestamp) -> i64 {
        (self.0 - earlier.0).whole_seconds()
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Rfc3339 formatting fails only for years outside 0..=9999, which `parse` and the
        // constructors never produce; fall back to the Debug form rather than panic.
        match self.0.format(&Rfc3339) {
            Ok(s) => f.write_str(&s),
            Err(_) => write!(f, "{:?}", self.0),
        }
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({self})")
    }
}

impl FromStr for Timestamp {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        /// Parses the string where the deserializer holds it, without copying it first.
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Timestamp;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an RFC 3339 UTC timestamp string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<Timestamp, E> {
                Timestamp::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_str(Visitor)
    }
}
