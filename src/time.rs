//! Timestamps as the CRMs write them, to and from milliseconds since the Unix epoch, without
//! a date library: UTC only, the proleptic Gregorian calendar.

/// `2026-11-21T09:30:00.000Z` for `millis` since the epoch.
pub fn iso_utc(millis: u64) -> String {
    let secs = millis / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        millis % 1000
    )
}

/// Milliseconds since the epoch of a UTC datetime as HubSpot or Salesforce writes it:
/// `2026-11-21T09:30:00Z`, `2026-11-21T09:30:00.123Z`, `2026-11-21T09:30:00.000+0000`.
pub fn parse_iso_utc(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<u64>().ok();
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &text[19..];
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        let three: String = fraction[..digits]
            .chars()
            .chain("000".chars())
            .take(3)
            .collect();
        millis = three.parse().ok()?;
        rest = &fraction[digits..];
    }
    if !matches!(rest, "Z" | "+0000" | "+00:00") || !(1..=12).contains(&month) || day == 0 {
        return None;
    }
    let days = days_from_civil(year as i64, month as u32, day as u32);
    let secs = u64::try_from(days).ok()? * 86_400 + hour * 3600 + minute * 60 + second;
    Some(secs * 1000 + millis)
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (Howard Hinnant's
/// `civil_from_days`).
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// (year, month, day) → days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_in_both_crms_spellings() {
        for millis in [
            0,
            86_399_999,
            1_700_000_000_123,
            1_795_000_000_000,
            4_102_444_800_000,
        ] {
            let text = iso_utc(millis);
            assert_eq!(parse_iso_utc(&text), Some(millis), "{text}");
        }
        assert_eq!(iso_utc(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        let salesforce = "2023-11-14T22:13:20.123+0000";
        assert_eq!(parse_iso_utc(salesforce), Some(1_700_000_000_123));
        assert_eq!(
            parse_iso_utc("2023-11-14T22:13:20Z"),
            Some(1_700_000_000_000)
        );
        for bad in [
            "2023-11-14",
            "2023-13-14T00:00:00Z",
            "2023-11-14T22:13:20+0100",
            "x",
        ] {
            assert_eq!(parse_iso_utc(bad), None, "{bad}");
        }
    }
}
