//! The name templates of the bus kinds (a NATS subject, a RabbitMQ
//! routing key, a Kafka topic): `{type}`, `{source}` and `{currency}`,
//! filled in per message.

use super::deliver::Outgoing;

pub const PLACEHOLDERS: [&str; 3] = ["{type}", "{source}", "{currency}"];

/// What a currency-less message (an `event.held`) puts for `{currency}`.
pub const NO_CURRENCY: &str = "none";

/// The template with every placeholder filled from the message.
pub fn fill(template: &str, message: &Outgoing<'_>) -> String {
    template
        .replace("{type}", message.message_type)
        .replace("{source}", message.source)
        .replace("{currency}", message.currency.unwrap_or(NO_CURRENCY))
}

/// Every `{...}` in the template is one of [`PLACEHOLDERS`], closed.
pub fn check_placeholders(template: &str) -> Result<(), String> {
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').ok_or("has a '{' without its '}'")?;
        let placeholder = &rest[open..open + close + 1];
        if !PLACEHOLDERS.contains(&placeholder) {
            return Err(format!(
                "{placeholder:?} is not a placeholder: use {}",
                PLACEHOLDERS.join(", ")
            ));
        }
        rest = &rest[open + close + 1..];
    }
    if rest.contains('}') {
        return Err("has a '}' without its '{'".into());
    }
    Ok(())
}

/// The template with its placeholders taken out: what is left must be
/// valid on its own in the destination's names.
pub fn literal_parts(template: &str) -> String {
    PLACEHOLDERS
        .iter()
        .fold(template.to_owned(), |text, p| text.replace(p, ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_checked_and_filled() {
        assert_eq!(check_placeholders("pay.{source}.{type}.{currency}"), Ok(()));
        assert!(check_placeholders("{kind}").is_err());
        assert!(check_placeholders("{type").is_err());
        assert!(check_placeholders("type}").is_err());
        assert_eq!(literal_parts("pay.{source}-{type}"), "pay.-");
        let mut message = Outgoing {
            id: "msg_1",
            message_type: "ledger.posted",
            source: "stripe",
            currency: Some("EUR"),
            account: Some("cus_1"),
            body: b"{}",
        };
        assert_eq!(
            fill("pay.{source}.{type}.{currency}", &message),
            "pay.stripe.ledger.posted.EUR"
        );
        message.currency = None;
        assert_eq!(fill("{type}.{currency}", &message), "ledger.posted.none");
    }
}
