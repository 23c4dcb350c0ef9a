//! Amounts in integer minor units. Money never passes through a float: a JSON
//! number that is not an integer is refused, never rounded.

use serde_json::Value;

/// Largest amount one event may move: 10^15 minor units (ten trillion dollars
/// in cents). With balances bounded in SQL (see `store`), sums of such amounts
/// can never overflow an `i64`, which SQLite would silently turn into a float.
pub const MAX_AMOUNT_MINOR: i64 = 1_000_000_000_000_000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    #[error("amount is missing")]
    Missing,
    #[error("amount must be a JSON integer of minor units, not {0}")]
    NotAnInteger(&'static str),
    #[error("amount must be positive, got {0}")]
    NotPositive(i64),
    #[error("amount {0} exceeds the per-event limit of 10^15 minor units")]
    TooLarge(String),
}

/// A strictly positive amount of minor units, at most [`MAX_AMOUNT_MINOR`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PositiveAmount(i64);

impl PositiveAmount {
    pub fn new(minor: i64) -> Result<Self, AmountError> {
        if minor <= 0 {
            Err(AmountError::NotPositive(minor))
        } else if minor > MAX_AMOUNT_MINOR {
            Err(AmountError::TooLarge(minor.to_string()))
        } else {
            Ok(Self(minor))
        }
    }

    /// Reads a JSON integer of minor units. Floats (`15.0`, `1e3`) and strings
    /// (`"1500"`) are refused: a provider that sends those is not sending what
    /// its mapping says, and guessing would be how money goes missing.
    pub fn from_json(value: Option<&Value>) -> Result<Self, AmountError> {
        let number = match value {
            None | Some(Value::Null) => return Err(AmountError::Missing),
            Some(Value::Number(n)) => n,
            Some(other) => return Err(AmountError::NotAnInteger(json_kind(other))),
        };
        if let Some(minor) = number.as_i64() {
            Self::new(minor)
        } else if number.is_u64() {
            Err(AmountError::TooLarge(number.to_string()))
        } else {
            Err(AmountError::NotAnInteger("a fractional number"))
        }
    }

    pub fn minor(self) -> i64 {
        self.0
    }
}

/// Formats signed minor units as a decimal with `exponent` digits after the
/// point (`1234`, 2 -> `12.34`), in integer arithmetic only.
pub fn format_minor(amount_minor: i64, exponent: u16) -> String {
    let sign = if amount_minor < 0 { "-" } else { "" };
    let magnitude = amount_minor.unsigned_abs();
    if exponent == 0 {
        return format!("{sign}{magnitude}");
    }
    let scale = 10u64.pow(u32::from(exponent));
    let width = usize::from(exponent);
    format!("{sign}{}.{:0width$}", magnitude / scale, magnitude % scale)
}

/// How a JSON value is described in error messages.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<i64, AmountError> {
        PositiveAmount::from_json(Some(&v)).map(PositiveAmount::minor)
    }

    #[test]
    fn integers_are_minor_units() {
        assert_eq!(parse(json!(1500)), Ok(1500));
        assert_eq!(parse(json!(MAX_AMOUNT_MINOR)), Ok(MAX_AMOUNT_MINOR));
    }

    #[test]
    fn formats_minor_units_exactly() {
        assert_eq!(format_minor(1234, 2), "12.34");
        assert_eq!(format_minor(-5, 2), "-0.05");
        assert_eq!(format_minor(1500, 0), "1500");
        assert_eq!(format_minor(1, 3), "0.001");
        assert_eq!(format_minor(i64::MIN, 2), "-92233720368547758.08");
    }

    #[test]
    fn floats_strings_and_non_positive_are_refused() {
        assert_eq!(
            parse(json!(15.5)),
            Err(AmountError::NotAnInteger("a fractional number"))
        );
        let float: Value = serde_json::from_str("1500.0").unwrap();
        assert!(matches!(parse(float), Err(AmountError::NotAnInteger(_))));
        assert_eq!(
            parse(json!("1500")),
            Err(AmountError::NotAnInteger("a string"))
        );
        assert_eq!(parse(json!(0)), Err(AmountError::NotPositive(0)));
        assert_eq!(parse(json!(-5)), Err(AmountError::NotPositive(-5)));
        assert!(matches!(
            parse(json!(MAX_AMOUNT_MINOR + 1)),
            Err(AmountError::TooLarge(_))
        ));
        assert!(matches!(
            parse(json!(u64::MAX)),
            Err(AmountError::TooLarge(_))
        ));
        assert_eq!(PositiveAmount::from_json(None), Err(AmountError::Missing));
        assert_eq!(parse(Value::Null), Err(AmountError::Missing));
    }
}
