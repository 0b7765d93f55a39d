//! Times as events keep them (RFC 3339 UTC, microseconds, fixed width: the
//! text sorts as the time does) and as filters take them (RFC 3339, or a
//! span back from now: `90s`, `15m`, `1h`, `7d`).

use std::time::{Duration, SystemTime};

use chrono::{DateTime, SecondsFormat, Utc};

/// Now, as events keep it.
pub fn now() -> String {
    format(SystemTime::now())
}

/// `time` as events keep it.
pub fn format(time: SystemTime) -> String {
    DateTime::<Utc>::from(time).to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// The instant `text` names, as events keep it: an RFC 3339 time (any
/// offset), or a span before `now` (`30s`, `15m`, `1h`, `7d`).
pub fn instant(text: &str, now: SystemTime) -> Result<String, String> {
    let text = text.trim();
    if let Some(span) = span(text) {
        let span = span?;
        let at = now.checked_sub(span).ok_or_else(|| {
            format!("`{text}` reaches back before the Unix epoch; give a shorter span")
        })?;
        return Ok(format(at));
    }
    DateTime::parse_from_rfc3339(text)
        .map(|at| {
            at.with_timezone(&Utc)
                .to_rfc3339_opts(SecondsFormat::Micros, true)
        })
        .map_err(|e| {
            format!(
                "`{text}` is not a time ({e}); give RFC 3339 (`2026-11-29T14:00:00Z`) or a \
                 span back from now (`30s`, `15m`, `1h`, `7d`)"
            )
        })
}

/// `Some` when `text` looks like a span (digits and a unit letter): the
/// span, or why it is wrong.
fn span(text: &str) -> Option<Result<Duration, String>> {
    let unit = text.chars().last().filter(char::is_ascii_alphabetic)?;
    let digits = &text[..text.len() - unit.len_utf8()];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let seconds_per = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        'w' => 7 * 86_400,
        _ => {
            return Some(Err(format!(
                "`{text}`: `{unit}` is no unit of time; use s, m, h, d or w (`15m`, `7d`)"
            )));
        }
    };
    let count: u64 = match digits.parse() {
        Ok(count) => count,
        Err(_) => return Some(Err(format!("`{text}` is too long a span"))),
    };
    Some(
        count
            .checked_mul(seconds_per)
            .map(Duration::from_secs)
            .ok_or_else(|| format!("`{text}` is too long a span")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(rfc3339: &str) -> SystemTime {
        DateTime::parse_from_rfc3339(rfc3339).unwrap().into()
    }

    #[test]
    fn times_are_fixed_width_utc_with_microseconds() {
        assert_eq!(
            format(at("2026-11-29T15:04:05.5+01:00")),
            "2026-11-29T14:04:05.500000Z"
        );
        assert_eq!(now().len(), "2026-11-29T14:04:05.500000Z".len());
    }

    #[test]
    fn filters_take_rfc3339_or_a_span_back_from_now() {
        let now = at("2026-11-29T14:00:00Z");
        for (text, expected) in [
            ("2026-11-29T13:00:00Z", "2026-11-29T13:00:00.000000Z"),
            ("2026-11-29T15:30:00+02:00", "2026-11-29T13:30:00.000000Z"),
            ("90s", "2026-11-29T13:58:30.000000Z"),
            ("15m", "2026-11-29T13:45:00.000000Z"),
            ("1h", "2026-11-29T13:00:00.000000Z"),
            ("2d", "2026-11-27T14:00:00.000000Z"),
            ("1w", "2026-11-22T14:00:00.000000Z"),
            (" 1h ", "2026-11-29T13:00:00.000000Z"),
        ] {
            assert_eq!(instant(text, now).as_deref(), Ok(expected), "{text}");
        }
    }

    #[test]
    fn wrong_times_say_what_would_be_right() {
        let now = at("2026-11-29T14:00:00Z");
        for (text, expected) in [
            ("yesterday", "`yesterday` is not a time"),
            ("5y", "`5y`: `y` is no unit of time; use s, m, h, d or w"),
            ("2026-11-29", "give RFC 3339 (`2026-11-29T14:00:00Z`)"),
            (
                "99999999999999999999d",
                "`99999999999999999999d` is too long a span",
            ),
            ("999999999999999w", "too long a span"),
        ] {
            let error = instant(text, now).unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }
}
