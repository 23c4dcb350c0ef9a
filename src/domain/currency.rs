//! ISO 4217 currency codes, validated against the `iso_currency` table so that
//! a typo ("USX") or a non-currency ("XXX", "XAU") never reaches a balance.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CurrencyError {
    #[error("currency {0:?} is not a three-letter ISO 4217 code")]
    Malformed(String),
    #[error("currency {0:?} is not a known ISO 4217 currency")]
    Unknown(String),
    #[error("currency {0:?} has no minor unit (it is not money)")]
    NoMinorUnit(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Currency(iso_currency::Currency);

impl Currency {
    /// Accepts exactly three ASCII letters in either case (Stripe sends
    /// lower-case codes); anything else, including surrounding white space,
    /// is refused rather than guessed at.
    pub fn parse(code: &str) -> Result<Self, CurrencyError> {
        if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(CurrencyError::Malformed(code.to_owned()));
        }
        let upper = code.to_ascii_uppercase();
        let currency = iso_currency::Currency::from_code(&upper)
            .ok_or_else(|| CurrencyError::Unknown(upper.clone()))?;
        if currency.exponent().is_none() {
            return Err(CurrencyError::NoMinorUnit(upper));
        }
        Ok(Self(currency))
    }

    pub fn code(&self) -> &'static str {
        self.0.code()
    }

    /// Digits after the decimal point: 2 for USD, 0 for JPY, 3 for KWD.
    pub fn exponent(&self) -> u16 {
        // `parse` only admits currencies that have an exponent.
        self.0.exponent().unwrap_or(0)
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_known_codes_in_any_case() {
        assert_eq!(Currency::parse("usd").unwrap().code(), "USD");
        assert_eq!(Currency::parse("EUR").unwrap().code(), "EUR");
        assert_eq!(Currency::parse("JPY").unwrap().exponent(), 0);
        assert_eq!(Currency::parse("KWD").unwrap().exponent(), 3);
    }

    #[test]
    fn refuses_malformed_unknown_and_non_money() {
        assert!(matches!(
            Currency::parse("usd "),
            Err(CurrencyError::Malformed(_))
        ));
        assert!(matches!(
            Currency::parse("XXXX"),
            Err(CurrencyError::Malformed(_))
        ));
        assert!(matches!(
            Currency::parse("U$D"),
            Err(CurrencyError::Malformed(_))
        ));
        assert!(matches!(
            Currency::parse("QQQ"),
            Err(CurrencyError::Unknown(_))
        ));
        assert!(matches!(
            Currency::parse("XXX"),
            Err(CurrencyError::NoMinorUnit(_))
        ));
        assert!(matches!(
            Currency::parse("XAU"),
            Err(CurrencyError::NoMinorUnit(_))
        ));
    }
}
