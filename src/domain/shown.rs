//! Amounts as people read them: `$15.00`, `¥1,500`, `CHF 1,234.50`, from
//! signed minor units with the currency's exponent (the admin pages and the
//! terminal views share this). Display only: nothing parses it back.

use super::{Currency, format_minor};

/// `$12.34`, `¥1,500`, `CHF 1,234.50`: the currency's exponent, thousands
/// grouped, a minus for a debit; a symbol only where it names one
/// currency on its own, the code otherwise. Raw minor units when the
/// currency is unknown (a rejected event).
pub fn money(amount_minor: Option<i64>, currency: Option<&str>) -> String {
    match (amount_minor, currency.map(Currency::parse)) {
        (Some(amount), Some(Ok(currency))) => {
            let plain = format_minor(amount, currency.exponent());
            let (sign, digits) = match plain.strip_prefix('-') {
                Some(digits) => ("-", digits),
                None => ("", plain.as_str()),
            };
            let (whole, fraction) = match digits.split_once('.') {
                Some((whole, fraction)) => (whole, format!(".{fraction}")),
                None => (digits, String::new()),
            };
            let number = format!("{}{fraction}", grouped(whole));
            match symbol(&currency.to_string()) {
                Some(symbol) => format!("{sign}{symbol}{number}"),
                None => format!("{currency} {sign}{number}"),
            }
        }
        (Some(amount), Some(Err(_))) => {
            format!("{amount} minor units of {}", currency.unwrap_or_default())
        }
        (Some(amount), None) => format!("{amount} minor units"),
        (None, _) => String::new(),
    }
}

/// What an amount is stored as, for the hover text: `1500 minor units of
/// JPY`.
pub fn minor_units(amount_minor: Option<i64>, currency: Option<&str>) -> String {
    match (amount_minor, currency) {
        (Some(amount), Some(currency)) => format!("{amount} minor units of {currency}"),
        (Some(amount), None) => format!("{amount} minor units"),
        (None, _) => String::new(),
    }
}

/// The symbols an operator reads as one currency without a second look.
fn symbol(code: &str) -> Option<&'static str> {
    Some(match code {
        "USD" => "$",
        "EUR" => "€",
        "GBP" => "£",
        "JPY" => "¥",
        "INR" => "₹",
        "KRW" => "₩",
        _ => return None,
    })
}

/// `1234567` -> `1,234,567`.
fn grouped(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_uses_the_currency_exponent() {
        assert_eq!(money(Some(-1550), Some("USD")), "-$15.50");
        assert_eq!(money(Some(1500), Some("JPY")), "¥1,500");
        assert_eq!(money(Some(1500), Some("USD")), "$15.00");
        assert_eq!(money(Some(-123_456_789), Some("CHF")), "CHF -1,234,567.89");
        assert_eq!(money(Some(100_000), Some("BHD")), "BHD 100.000");
        assert_eq!(money(Some(5), Some("EUR")), "€0.05");
        assert_eq!(
            minor_units(Some(1500), Some("JPY")),
            "1500 minor units of JPY"
        );
        assert_eq!(money(Some(5), Some("QQQ")), "5 minor units of QQQ");
        assert_eq!(money(None, Some("USD")), "");
    }
}
