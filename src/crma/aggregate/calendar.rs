//! Date buckets in the account's time zone: a HubSpot datetime (`closedate`,
//! `2026-03-31T23:30:00Z`) belongs to the day, week, month, quarter or year it falls in where
//! the account is (`US/Eastern`: the evening of March 31st, so March and Q1), daylight saving
//! included; a date-only property (`2026-03-31`) is a calendar date and is never shifted.

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};
use schemars::JsonSchema;
use serde::Deserialize;

/// How dates are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs, reason = "variant docs would change the input schema")]
pub enum Bucket {
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

impl Bucket {
    /// The bucket's name, as the input spells it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Bucket::Day => "day",
            Bucket::Week => "week",
            Bucket::Month => "month",
            Bucket::Quarter => "quarter",
            Bucket::Year => "year",
        }
    }
}

/// The account's zone, or UTC when HubSpot named none this database knows (said in a note).
#[derive(Debug, Clone)]
pub(crate) struct Zone {
    zone: TimeZone,
    name: String,
}

impl Zone {
    /// The zone HubSpot names (`US/Eastern`, `Europe/Berlin`); `None` when it is unknown.
    pub(crate) fn named(name: &str) -> Option<Zone> {
        crate::tzdb::zone(name).map(|zone| Zone {
            zone,
            name: name.to_string(),
        })
    }

    /// Coordinated Universal Time.
    pub(crate) fn utc() -> Zone {
        Zone {
            zone: TimeZone::UTC,
            name: "UTC".into(),
        }
    }

    /// The zone's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The calendar date of a HubSpot date or datetime value: `YYYY-MM-DD` as it is, an ISO
    /// 8601 instant or epoch milliseconds in this zone. `None` for anything else.
    fn date_of(&self, value: &str) -> Option<Date> {
        if value.len() == 10 {
            return value.parse::<Date>().ok();
        }
        let instant = if value.bytes().all(|b| b.is_ascii_digit()) {
            Timestamp::from_millisecond(value.parse().ok()?).ok()?
        } else {
            value.parse::<Timestamp>().ok()?
        };
        Some(instant.to_zoned(self.zone.clone()).date())
    }

    /// The bucket `value` falls in, as a sortable key (`2026-03-31`, `2026-W14`, `2026-03`,
    /// `2026-Q1`, `2026`) and the date it starts on. `None` when `value` is not a date.
    pub(crate) fn bucket(&self, value: &str, bucket: Bucket) -> Option<(String, Date)> {
        let date = self.date_of(value)?;
        Some(match bucket {
            Bucket::Day => (date.to_string(), date),
            Bucket::Week => {
                let week = date.iso_week_date();
                let monday = date
                    .checked_sub(i64::from(date.weekday().to_monday_zero_offset()).days())
                    .ok()?;
                (format!("{:04}-W{:02}", week.year(), week.week()), monday)
            }
            Bucket::Month => (
                format!("{:04}-{:02}", date.year(), date.month()),
                date.first_of_month(),
            ),
            Bucket::Quarter => {
                let quarter = (date.month() - 1) / 3 + 1;
                let first = Date::new(date.year(), (quarter - 1) * 3 + 1, 1).ok()?;
                (format!("{:04}-Q{quarter}", date.year()), first)
            }
            Bucket::Year => (format!("{:04}", date.year()), date.first_of_year()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(zone: &Zone, value: &str, bucket: Bucket) -> String {
        zone.bucket(value, bucket).unwrap().0
    }

    #[test]
    fn a_datetime_falls_in_the_accounts_day_month_and_quarter() {
        let eastern = Zone::named("US/Eastern").expect("HubSpot's own example zone is known");
        // 23:30 UTC on March 31st is the evening of March 31st in New York (EDT, -4)...
        let late = "2026-03-31T23:30:00Z";
        assert_eq!(key(&eastern, late, Bucket::Day), "2026-03-31");
        // ...and 02:30 UTC on April 1st still is.
        let after_midnight_utc = "2026-04-01T02:30:00.000Z";
        assert_eq!(key(&eastern, after_midnight_utc, Bucket::Month), "2026-03");
        assert_eq!(
            key(&eastern, after_midnight_utc, Bucket::Quarter),
            "2026-Q1"
        );
        assert_eq!(
            key(&Zone::utc(), after_midnight_utc, Bucket::Month),
            "2026-04"
        );
        // In winter New York is 5 hours behind: 04:30 UTC on January 1st is New Year's Eve.
        assert_eq!(key(&eastern, "2026-01-01T04:30:00Z", Bucket::Year), "2025");
        assert_eq!(key(&eastern, "2026-01-01T05:30:00Z", Bucket::Year), "2026");
        // Epoch milliseconds, as search filters and some answers write datetimes.
        assert_eq!(key(&eastern, "1774999800000", Bucket::Day), "2026-03-31");
    }

    #[test]
    fn a_date_only_value_is_never_shifted() {
        let tokyo = Zone::named("Asia/Tokyo").unwrap();
        assert_eq!(key(&tokyo, "2026-12-31", Bucket::Day), "2026-12-31");
        assert_eq!(key(&tokyo, "2026-12-31", Bucket::Year), "2026");
    }

    #[test]
    fn weeks_are_iso_weeks_starting_on_monday() {
        let utc = Zone::utc();
        let (week, monday) = utc.bucket("2026-11-26", Bucket::Week).unwrap();
        assert_eq!(
            (week.as_str(), monday.to_string().as_str()),
            ("2026-W48", "2026-11-23")
        );
        // January 1st 2027 is a Friday: ISO week 53 of 2026.
        assert_eq!(key(&utc, "2027-01-01", Bucket::Week), "2026-W53");
    }

    #[test]
    fn what_is_not_a_date_has_no_bucket_and_unknown_zones_are_none() {
        let utc = Zone::utc();
        for bad in ["", "soon", "2026-13-01", "2026-02-30", "12:00"] {
            assert!(utc.bucket(bad, Bucket::Day).is_none(), "{bad:?}");
        }
        assert!(Zone::named("Mars/Olympus_Mons").is_none());
    }
}
