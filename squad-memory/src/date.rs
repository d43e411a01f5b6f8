//! Dates in headings and fields: every shape real squads write (`2026-03-14`, `2025-07`,
//! `2026-03-01T00:34Z`, `2026-03-07T01-50-00Z`, RFC 3339, SEM's `±hhmm` offset), found at the
//! start of a heading or inside it.

use squad_model::Timestamp;
use time::{Date, Month, PrimitiveDateTime, Time, UtcOffset};

/// A date found in a text: the time (UTC) and the byte range it spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) at: Timestamp,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

fn digits(b: &[u8], at: usize, n: usize) -> Option<u32> {
    let s = b.get(at..at + n)?;
    if !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0')))
}

/// What [`scan`] read at one position: `Ok` a valid date, `Err(())` something shaped like a
/// date that is not one (`2026-13-45`), `None` nothing date-shaped.
type Scan = Option<std::result::Result<Found, ()>>;

/// Reads a date starting exactly at byte `start` of `s`.
fn scan(s: &str, start: usize) -> Scan {
    let b = s.as_bytes();
    if start > 0 && b.get(start - 1).is_some_and(u8::is_ascii_alphanumeric) {
        return None;
    }
    let year = digits(b, start, 4)?;
    if b.get(start + 4) != Some(&b'-') {
        return None;
    }
    let month = digits(b, start + 5, 2)?;
    let mut i = start + 7;
    // Day: two digits, or `XX` (a day not known: the month is kept).
    let mut day = 1;
    if b.get(i) == Some(&b'-') {
        if let Some(d) = digits(b, i + 1, 2) {
            day = d;
            i += 3;
        } else if b
            .get(i + 1..i + 3)
            .is_some_and(|x| x.eq_ignore_ascii_case(b"xx"))
        {
            i += 3;
        }
    }
    let (mut hour, mut minute, mut second, mut millis) = (0, 0, 0, 0);
    let mut offset_minutes: i32 = 0;
    if matches!(b.get(i), Some(b'T' | b't'))
        && let (Some(h), Some(sep), Some(m)) =
            (digits(b, i + 1, 2), b.get(i + 3), digits(b, i + 4, 2))
        && (*sep == b':' || *sep == b'-')
    {
        {
            hour = h;
            minute = m;
            i += 6;
            if matches!(b.get(i), Some(b':' | b'-'))
                && let Some(sec) = digits(b, i + 1, 2)
            {
                second = sec;
                i += 3;
                if b.get(i) == Some(&b'.') {
                    let mut j = i + 1;
                    let mut frac = String::new();
                    while let Some(d) = b.get(j).filter(|d| d.is_ascii_digit()) {
                        if frac.len() < 3 {
                            frac.push(char::from(*d));
                        }
                        j += 1;
                    }
                    if j > i + 1 {
                        while frac.len() < 3 {
                            frac.push('0');
                        }
                        millis = frac.parse().unwrap_or(0);
                        i = j;
                    }
                }
            }
            match b.get(i) {
                Some(b'Z' | b'z') => i += 1,
                Some(sign @ (b'+' | b'-')) => {
                    let sign = if *sign == b'-' { -1 } else { 1 };
                    if let Some(oh) = digits(b, i + 1, 2) {
                        let (om, len) = if b.get(i + 3) == Some(&b':') {
                            (digits(b, i + 4, 2), 6)
                        } else {
                            (digits(b, i + 3, 2), 5)
                        };
                        if let Some(om) = om {
                            offset_minutes = sign * (oh * 60 + om) as i32;
                            i += len;
                        }
                    }
                }
                _ => {}
            }
        }
    }
    if b.get(i).is_some_and(u8::is_ascii_alphanumeric) {
        return None;
    }
    let found = (|| {
        let month = Month::try_from(u8::try_from(month).ok()?).ok()?;
        let date =
            Date::from_calendar_date(i32::try_from(year).ok()?, month, u8::try_from(day).ok()?)
                .ok()?;
        let time = Time::from_hms_milli(
            u8::try_from(hour).ok()?,
            u8::try_from(minute).ok()?,
            u8::try_from(second.min(59)).ok()?,
            u16::try_from(millis).ok()?,
        )
        .ok()?;
        let offset = UtcOffset::from_whole_seconds(offset_minutes * 60).ok()?;
        let t = PrimitiveDateTime::new(date, time).assume_offset(offset);
        let ms = t
            .unix_timestamp()
            .checked_mul(1_000)?
            .checked_add(i64::from(t.millisecond()))?;
        Timestamp::from_unix_millis(ms).ok()
    })();
    Some(match found {
        Some(at) => Ok(Found { at, start, end: i }),
        None => Err(()),
    })
}

/// Parses a whole string as a date: `YYYY-MM-DD`, `YYYY-MM`, RFC 3339 with any offset, the SEM
/// form with a `±hhmm` offset without a colon, or a time without seconds (`T00:34Z`). The result
/// is in UTC.
///
/// ```
/// use squad_memory::parse_date;
///
/// assert_eq!(parse_date("2026-11-02T12:00:00+0200").unwrap().to_string(), "2026-11-02T10:00:00Z");
/// assert_eq!(parse_date("2025-07").unwrap().to_string(), "2025-07-01T00:00:00Z");
/// assert!(parse_date("2026-13-45").is_none());
/// ```
pub fn parse_date(s: &str) -> Option<Timestamp> {
    let s = s.trim();
    match scan(s, 0) {
        Some(Ok(f)) if f.end == s.len() => Some(f.at),
        _ => None,
    }
}

/// A date at the very start of `s`: `Some(Ok)` when there is one, `Some(Err(()))` when the start
/// is shaped like a date that is not valid.
pub(crate) fn leading(s: &str) -> Scan {
    scan(s, 0)
}

/// The date a heading holds somewhere in its text: the last one inside parentheses, else the
/// last one anywhere.
pub(crate) fn inside(s: &str) -> Option<Found> {
    let b = s.as_bytes();
    let mut last: Option<Found> = None;
    let mut last_paren: Option<Found> = None;
    let mut i = 0;
    while i + 7 <= b.len() {
        if b[i].is_ascii_digit()
            && let Some(Ok(f)) = scan(s, i)
        {
            let in_paren = s[..f.start].rfind(['(', ')']).is_some_and(|p| b[p] == b'(');
            if in_paren {
                last_paren = Some(f);
            }
            last = Some(f);
            i = f.end.max(i + 1);
            continue;
        }
        i += 1;
    }
    last_paren.or(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> String {
        parse_date(s).map(|t| t.to_string()).unwrap_or_default()
    }

    #[test]
    fn every_shape_parses() {
        assert_eq!(d("2026-03-14"), "2026-03-14T00:00:00Z");
        assert_eq!(d("2025-07"), "2025-07-01T00:00:00Z");
        assert_eq!(d("2026-03-XX"), "2026-03-01T00:00:00Z");
        assert_eq!(d("2026-03-01T00:34Z"), "2026-03-01T00:34:00Z");
        assert_eq!(d("2026-03-07T01-50-00Z"), "2026-03-07T01:50:00Z");
        assert_eq!(d("2026-03-15T05:30:00Z"), "2026-03-15T05:30:00Z");
        assert_eq!(d("2026-11-02T12:00:00+0200"), "2026-11-02T10:00:00Z");
        assert_eq!(
            d("2026-11-02T12:00:00.123-01:30"),
            "2026-11-02T13:30:00.123Z"
        );
        for bad in [
            "2026-13-01",
            "2026-02-30",
            "1.",
            "20260314",
            "2026-03-14x",
            "",
        ] {
            assert_eq!(d(bad), "", "{bad}");
        }
    }

    #[test]
    fn dates_inside_headings() {
        let at = |s: &str| inside(s).map(|f| f.at.to_string()).unwrap_or_default();
        assert_eq!(
            at("Fix the tag (#977) (2026-05-01)"),
            "2026-05-01T00:00:00Z"
        );
        assert_eq!(
            at("Release (2026-03-23 Release Incident)"),
            "2026-03-23T00:00:00Z"
        );
        assert_eq!(at("📌 Sync — 2026-03-07T01-50-00Z"), "2026-03-07T01:50:00Z");
        assert_eq!(
            at("INCIDENT REPORT: x (2026-03-XX)"),
            "2026-03-01T00:00:00Z"
        );
        assert_eq!(at("CLI Entry Point Architecture"), "");
        assert_eq!(at("1. Title: 2026 plans"), "");
    }
}
