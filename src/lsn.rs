//! PostgreSQL log sequence numbers.
//!
//! An LSN is a byte position in the write-ahead log, a `u64`. PostgreSQL prints it as two
//! hexadecimal halves, `16/B374D848`; Debezium prints it as the decimal `u64` in events and
//! offsets. [`Lsn`] converts between the two.

use std::fmt;
use std::str::FromStr;

/// A WAL position as `u64`; `Display` gives PostgreSQL's `X/Y` form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lsn(pub u64);

impl Lsn {
    /// The invalid LSN `0/0`, which START_REPLICATION reads as "the slot's confirmed position".
    pub const ZERO: Lsn = Lsn(0);
}

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:X}/{:X}", self.0 >> 32, self.0 & 0xFFFF_FFFF)
    }
}

/// Error for text that is not of the form `X/Y` with hexadecimal halves.
#[derive(Debug, thiserror::Error)]
#[error(
    "invalid LSN {0:?}: expected two hexadecimal numbers separated by '/', such as 16/B374D848"
)]
pub struct ParseLsnError(String);

impl FromStr for Lsn {
    type Err = ParseLsnError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (hi, lo) = s
            .trim()
            .split_once('/')
            .ok_or_else(|| ParseLsnError(s.to_string()))?;
        let hi = u32::from_str_radix(hi, 16).map_err(|_| ParseLsnError(s.to_string()))?;
        let lo = u32::from_str_radix(lo, 16).map_err(|_| ParseLsnError(s.to_string()))?;
        Ok(Lsn(((hi as u64) << 32) | lo as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsn_round_trips_through_postgres_text_form() {
        let l: Lsn = "16/B374D848".parse().unwrap();
        assert_eq!(l.0, 0x16_B374_D848);
        assert_eq!(l.to_string(), "16/B374D848");
        assert_eq!("0/16B6C50".parse::<Lsn>().unwrap().0, 23817296);
    }

    #[test]
    fn malformed_lsn_is_an_error() {
        assert!("16B374D848".parse::<Lsn>().is_err());
        assert!("G/1".parse::<Lsn>().is_err());
    }
}
