//! Money and currency parsing: never a panic; a decimal that parses
//! formats back to the same number of minor units.
#![no_main]

use hookledger::domain::{AmountFormat, Currency, PositiveAmount, format_minor, parse_decimal};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (code, amount) = text.split_once(' ').unwrap_or(("USD", text));
    let Ok(currency) = Currency::parse(code) else {
        return;
    };
    if let Ok(minor) = parse_decimal(amount, currency) {
        let formatted = format_minor(minor, currency.exponent());
        assert_eq!(parse_decimal(&formatted, currency), Ok(minor), "{amount}");
    }
    let value = serde_json::Value::String(amount.to_owned());
    for format in [
        AmountFormat::Minor,
        AmountFormat::MinorString,
        AmountFormat::Decimal,
    ] {
        let _ = PositiveAmount::from_json_as(Some(&value), format, currency);
    }
    if let Ok(number) = serde_json::from_str::<serde_json::Value>(amount) {
        let _ = PositiveAmount::from_json(Some(&number));
    }
});
