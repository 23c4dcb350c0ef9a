//! Amounts in integer minor units. Money never passes through a float: a JSON
//! number that is not an integer is refused, never rounded. Providers send
//! amounts three ways ([`AmountFormat`]), and each is read exactly: integer
//! minor units (Stripe `1500`), minor units in a string (Paddle `"1500"`), and
//! a decimal string in major units (Shopify, PayPal `"15.00"`), scaled by the
//! currency's ISO 4217 exponent, with any digit the currency cannot hold
//! refused (`"10.001"` USD), never rounded.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::Currency;

/// How a provider writes an amount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AmountFormat {
    /// A JSON integer of minor units: `1500`.
    Minor,
    /// Minor units as a string of digits: `"1500"`.
    MinorString,
    /// A decimal string in major units: `"15.00"` (USD), `"1500"` (JPY).
    Decimal,
}

impl AmountFormat {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "minor" => Some(Self::Minor),
            "minor-string" => Some(Self::MinorString),
            "decimal" => Some(Self::Decimal),
            _ => None,
        }
    }
}

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
    #[error("amount must be a string of {expected}, not {found}")]
    NotAString {
        expected: &'static str,
        found: &'static str,
    },
    #[error("amount {0:?} is not {1}")]
    Malformed(String, &'static str),
    #[error("amount {amount:?} has more decimal places than {currency} has ({exponent})")]
    TooPrecise {
        amount: String,
        currency: &'static str,
        exponent: u16,
    },
}

/// Longest amount string read; 10^15 minor units need at most 20 characters.
const MAX_AMOUNT_TEXT: usize = 40;

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

    /// Reads an amount written in `format`; `currency` gives the exponent
    /// for decimal strings.
    pub fn from_json_as(
        value: Option<&Value>,
        format: AmountFormat,
        currency: Currency,
    ) -> Result<Self, AmountError> {
        let expected = match format {
            AmountFormat::Minor => return Self::from_json(value),
            AmountFormat::MinorString => "digits (minor units)",
            AmountFormat::Decimal => "a decimal number (major units)",
        };
        let text = match value {
            None | Some(Value::Null) => return Err(AmountError::Missing),
            Some(Value::String(text)) => text,
            Some(other) => {
                return Err(AmountError::NotAString {
                    expected,
                    found: json_kind(other),
                });
            }
        };
        match format {
            AmountFormat::MinorString => Self::new(parse_digits(text, expected)?),
            _ => Self::new(parse_decimal(text, currency)?),
        }
    }

    pub fn minor(self) -> i64 {
        self.0
    }
}

/// `"1500"` -> 1500: ASCII digits only (no sign, point, exponent or space).
fn parse_digits(text: &str, expected: &'static str) -> Result<i64, AmountError> {
    if text.is_empty() || text.len() > MAX_AMOUNT_TEXT || !text.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(AmountError::Malformed(text.to_owned(), expected));
    }
    text.parse::<i64>()
        .map_err(|_| AmountError::TooLarge(text.to_owned()))
}

/// `"15.00"` USD -> 1500, `"1500"` JPY -> 1500, `"0.125"` KWD -> 125:
/// digits, optionally a point and more digits. Fraction digits beyond the
/// currency's exponent must be zeros (`"15.000"` USD is 1500); any other is
/// refused, never rounded.
pub fn parse_decimal(text: &str, currency: Currency) -> Result<i64, AmountError> {
    const WHAT: &str = "a decimal number like 15.00";
    let malformed = || AmountError::Malformed(text.to_owned(), WHAT);
    if text.len() > MAX_AMOUNT_TEXT {
        return Err(malformed());
    }
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) if !fraction.is_empty() => (whole, fraction),
        Some(_) => return Err(malformed()),
        None => (text, ""),
    };
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) {
        return Err(malformed());
    }
    let exponent = usize::from(currency.exponent());
    let (kept, dropped) = fraction.split_at(fraction.len().min(exponent));
    if dropped.bytes().any(|b| b != b'0') {
        return Err(AmountError::TooPrecise {
            amount: text.to_owned(),
            currency: currency.code(),
            exponent: currency.exponent(),
        });
    }
    // Whole and kept fraction digits, padded to the exponent, are the minor
    // units as one integer.
    let minor = format!("{whole}{kept:0<exponent$}");
    minor
        .parse::<i64>()
        .map_err(|_| AmountError::TooLarge(text.to_owned()))
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

    fn currency(code: &str) -> Currency {
        Currency::parse(code).unwrap()
    }

    fn read(value: Value, format: AmountFormat, code: &str) -> Result<i64, AmountError> {
        PositiveAmount::from_json_as(Some(&value), format, currency(code))
            .map(PositiveAmount::minor)
    }

    #[test]
    fn decimal_strings_use_the_currency_exponent_exactly() {
        let decimal = AmountFormat::Decimal;
        assert_eq!(read(json!("15.00"), decimal, "USD"), Ok(1500));
        assert_eq!(read(json!("15"), decimal, "USD"), Ok(1500));
        assert_eq!(read(json!("15.5"), decimal, "USD"), Ok(1550));
        assert_eq!(read(json!("0.01"), decimal, "USD"), Ok(1));
        assert_eq!(read(json!("1500"), decimal, "JPY"), Ok(1500));
        assert_eq!(read(json!("1500.00"), decimal, "JPY"), Ok(1500));
        assert_eq!(read(json!("0.125"), decimal, "KWD"), Ok(125));
        assert_eq!(read(json!("15.000"), decimal, "USD"), Ok(1500));
        assert_eq!(
            read(json!("10.001"), decimal, "USD"),
            Err(AmountError::TooPrecise {
                amount: "10.001".into(),
                currency: "USD",
                exponent: 2
            })
        );
        assert!(matches!(
            read(json!("1500.5"), decimal, "JPY"),
            Err(AmountError::TooPrecise { .. })
        ));
        for bad in [
            "", ".5", "5.", "-5.00", "+5", " 5", "5 ", "1e3", "1,000.00", "5..0", "0x10",
        ] {
            assert!(
                matches!(
                    read(json!(bad), decimal, "USD"),
                    Err(AmountError::Malformed(..))
                ),
                "{bad:?}"
            );
        }
        assert_eq!(
            read(json!("0.00"), decimal, "USD"),
            Err(AmountError::NotPositive(0))
        );
        assert!(matches!(
            read(json!("10000000000000.01"), decimal, "USD"),
            Err(AmountError::TooLarge(_))
        ));
        assert!(matches!(
            read(json!("99999999999999999999"), decimal, "USD"),
            Err(AmountError::TooLarge(_))
        ));
    }

    #[test]
    fn a_json_number_is_refused_where_a_string_is_expected() {
        for format in [AmountFormat::Decimal, AmountFormat::MinorString] {
            assert!(matches!(
                read(json!(15.5), format, "USD"),
                Err(AmountError::NotAString {
                    found: "a number",
                    ..
                })
            ));
            assert!(matches!(
                read(json!(1500), format, "USD"),
                Err(AmountError::NotAString { .. })
            ));
        }
    }

    #[test]
    fn minor_unit_strings_are_digits_only() {
        let minor = AmountFormat::MinorString;
        assert_eq!(read(json!("1500"), minor, "USD"), Ok(1500));
        assert_eq!(read(json!("1500"), minor, "JPY"), Ok(1500));
        for bad in ["15.00", "-1", "", " 1", "1e3"] {
            assert!(
                matches!(
                    read(json!(bad), minor, "USD"),
                    Err(AmountError::Malformed(..))
                ),
                "{bad}"
            );
        }
        assert_eq!(
            read(json!("1500"), AmountFormat::Minor, "USD"),
            Err(AmountError::NotAnInteger("a string"))
        );
    }

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
