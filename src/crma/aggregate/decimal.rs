//! Exact decimal numbers for sums of money: HubSpot stores a number property as text
//! (`"1500.50"`), and adding 25,000 of them as `f64` drifts by cents. A [`Decimal`] is an
//! integer count of `10^-scale` units, so sums, minima and maxima are exact; only an average
//! is rounded, and it says to how many places.

use std::cmp::Ordering;
use std::fmt;

/// Most decimal places kept: more than any currency or HubSpot number property needs.
const MAX_SCALE: u32 = 18;

/// An exact decimal: `units × 10^-scale`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Decimal {
    units: i128,
    scale: u32,
}

/// Why a value is not a number this module can hold exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecimalError {
    /// Not decimal text (`"12abc"`, `"NaN"`, `""`).
    NotANumber,
    /// Past ±1.7e38 units or more than [`MAX_SCALE`] decimal places.
    OutOfRange,
}

impl Decimal {
    /// Zero, with no decimal places.
    pub(crate) const ZERO: Decimal = Decimal { units: 0, scale: 0 };

    /// Parses decimal text as HubSpot writes numbers: an optional sign, digits, an optional
    /// fraction and an optional exponent (`-12`, `1500.50`, `1.5E3`, `.5`).
    pub(crate) fn parse(text: &str) -> Result<Decimal, DecimalError> {
        let text = text.trim();
        let (mantissa, exponent) = match text.find(['e', 'E']) {
            Some(at) => {
                let exponent: i32 = text[at + 1..]
                    .parse()
                    .map_err(|_| DecimalError::NotANumber)?;
                (&text[..at], exponent)
            }
            None => (text, 0),
        };
        let (negative, digits) = match mantissa.as_bytes().first() {
            Some(b'-') => (true, &mantissa[1..]),
            Some(b'+') => (false, &mantissa[1..]),
            _ => (false, mantissa),
        };
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.len() + fraction.len() == 0 || !all_digits(whole) || !all_digits(fraction) {
            return Err(DecimalError::NotANumber);
        }
        let mut units: i128 = 0;
        for b in whole.bytes().chain(fraction.bytes()) {
            units = units
                .checked_mul(10)
                .and_then(|u| u.checked_add(i128::from(b - b'0')))
                .ok_or(DecimalError::OutOfRange)?;
        }
        if units == 0 {
            // Zero whatever its exponent (`0e-2147483648` must not loop for billions of steps).
            return Ok(Decimal::ZERO);
        }
        let mut scale = i64::try_from(fraction.len()).unwrap_or(i64::MAX) - i64::from(exponent);
        while scale < 0 {
            units = units.checked_mul(10).ok_or(DecimalError::OutOfRange)?;
            scale += 1;
        }
        // Trailing zeros past the point carry no value: dropping them keeps scales small.
        while scale > 0 && units % 10 == 0 {
            units /= 10;
            scale -= 1;
        }
        let scale = u32::try_from(scale)
            .ok()
            .filter(|s| *s <= MAX_SCALE)
            .ok_or(DecimalError::OutOfRange)?;
        Ok(Decimal {
            units: if negative { -units } else { units },
            scale,
        })
    }

    /// `self` written with `scale` places (never fewer than it has).
    fn rescaled(self, scale: u32) -> Option<i128> {
        10i128
            .checked_pow(scale.checked_sub(self.scale)?)
            .and_then(|f| self.units.checked_mul(f))
    }

    /// The exact sum, or `None` past the range.
    pub(crate) fn checked_add(self, other: Decimal) -> Option<Decimal> {
        let scale = self.scale.max(other.scale);
        let units = self.rescaled(scale)?.checked_add(other.rescaled(scale)?)?;
        Some(Decimal { units, scale })
    }

    /// `self / count`, rounded half away from zero to `places` decimal places.
    pub(crate) fn divided(self, count: u64, places: u32) -> Option<Decimal> {
        if count == 0 {
            return None;
        }
        // Truncating at a finer place first keeps the digits that decide the rounding.
        let finer = self.scale.max(places + 1);
        let quotient = self.rescaled(finer)? / i128::from(count);
        let shifted = quotient / 10i128.checked_pow(finer - places - 1)?;
        Some(Decimal {
            units: (shifted + shifted.signum() * 5) / 10,
            scale: places,
        })
    }

    /// The number of decimal places written.
    pub(crate) fn scale(self) -> u32 {
        self.scale
    }
}

impl PartialEq for Decimal {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Decimal {}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        let scale = self.scale.max(other.scale);
        match (self.rescaled(scale), other.rescaled(scale)) {
            (Some(a), Some(b)) => a.cmp(&b),
            // Past i128 after scaling: the signs, then the whole parts, decide.
            _ => (self.units.signum(), self.whole()).cmp(&(other.units.signum(), other.whole())),
        }
    }
}

impl Decimal {
    fn whole(self) -> i128 {
        self.units / 10i128.pow(self.scale)
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.units < 0 { "-" } else { "" };
        let digits = self.units.unsigned_abs().to_string();
        let scale = self.scale as usize;
        if scale == 0 {
            return write!(f, "{sign}{digits}");
        }
        let padded = format!("{digits:0>width$}", width = scale + 1);
        let (whole, fraction) = padded.split_at(padded.len() - scale);
        // Sums keep the places of their terms; the zeros they end in say nothing.
        match fraction.trim_end_matches('0') {
            "" => write!(f, "{sign}{whole}"),
            fraction => write!(f, "{sign}{whole}.{fraction}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> Decimal {
        Decimal::parse(text).unwrap()
    }

    #[test]
    fn numbers_as_hubspot_writes_them_parse_exactly() {
        assert_eq!(d("1500.50").to_string(), "1500.5");
        assert_eq!(d("-12").to_string(), "-12");
        assert_eq!(d("1.5E3").to_string(), "1500");
        assert_eq!(d("2.5e-2").to_string(), "0.025");
        assert_eq!(d(".5").to_string(), "0.5");
        assert_eq!(d("+0.10").to_string(), "0.1");
        assert_eq!(d("0").to_string(), "0");
        for bad in ["", "abc", "1.2.3", "NaN", "1e", "--1", "1,5", " . "] {
            assert_eq!(
                Decimal::parse(bad),
                Err(DecimalError::NotANumber),
                "{bad:?}"
            );
        }
        assert_eq!(
            Decimal::parse("1e400").unwrap_err(),
            DecimalError::OutOfRange
        );
        assert_eq!(d("0e-2147483648").to_string(), "0");
        assert_eq!(d("-0.000e2147483647").to_string(), "0");
    }

    #[test]
    fn ten_thousand_cents_sum_exactly_where_floating_point_drifts() {
        let mut sum = Decimal::ZERO;
        let mut float = 0.0f64;
        for _ in 0..10_000 {
            sum = sum.checked_add(d("0.10")).unwrap();
            float += 0.10;
        }
        assert_eq!(sum.to_string(), "1000");
        assert_ne!(float, 1000.0, "f64 drifts: {float}");
    }

    #[test]
    fn averages_round_half_away_from_zero_to_the_places_asked() {
        assert_eq!(d("10").divided(3, 2).unwrap().to_string(), "3.33");
        assert_eq!(d("20").divided(3, 2).unwrap().to_string(), "6.67");
        assert_eq!(d("-20").divided(3, 2).unwrap().to_string(), "-6.67");
        assert_eq!(d("0.125").divided(1, 2).unwrap().to_string(), "0.13");
        assert_eq!(d("7").divided(2, 0).unwrap().to_string(), "4");
        assert!(d("1").divided(0, 2).is_none());
    }

    #[test]
    fn values_compare_by_amount_whatever_their_places() {
        assert_eq!(d("1.50"), d("1.5"));
        assert!(d("2") > d("1.999"));
        assert!(d("-3") < d("-2.5"));
        assert_eq!(d("1.2").scale(), 1);
    }
}
