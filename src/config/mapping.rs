//! A source's mapping keys (types and paths), its negative-balance policy
//! and its kind's own settings -> validated values.

use super::ConfigError;
use super::raw::RawSource;
use crate::domain::{Basis, NegativeBalance, OrderingMode};
use crate::providers::{Effect, JsonPath, KindSettings, Mapping, Provider, Rule, enabled_rules};

fn path(raw: Option<&str>, key: &str, name: &str) -> Result<Option<JsonPath>, ConfigError> {
    raw.map(|text| {
        JsonPath::parse(text).map_err(|e| ConfigError::new(format!("{key}.{name}"), e.to_string()))
    })
    .transpose()
}

fn types(
    list: Option<&Vec<String>>,
    key: &str,
    name: &str,
) -> Result<Option<Vec<String>>, ConfigError> {
    let Some(list) = list else {
        return Ok(None);
    };
    if let Some(bad) = list.iter().find(|t| t.trim().is_empty() || t.len() > 255) {
        return Err(ConfigError::new(
            format!("{key}.{name}"),
            format!("{bad:?} is not an event type"),
        ));
    }
    Ok(Some(list.clone()))
}

pub fn mapping(
    raw: &RawSource,
    provider: &dyn Provider,
    key: &str,
) -> Result<Mapping, ConfigError> {
    let account_path = raw
        .account_path
        .as_deref()
        .unwrap_or(provider.default_account_path());
    let account_path = JsonPath::parse(account_path)
        .map_err(|e| ConfigError::new(format!("{key}.account_path"), e.to_string()))?;
    let object_path = path(raw.object_path.as_deref(), key, "object_path")?;
    let (payment_path, reverses_path) =
        super::payments::paths(raw, provider, key, object_path.as_ref())?;
    let mapping = Mapping {
        account_path,
        amount_path: path(raw.amount_path.as_deref(), key, "amount_path")?,
        amount_format: raw.amount_format,
        currency_path: path(raw.currency_path.as_deref(), key, "currency_path")?,
        sequence_path: path(raw.sequence_path.as_deref(), key, "sequence_path")?,
        object_path,
        payment_path,
        reverses_path,
        credit_types: types(raw.credit_types.as_ref(), key, "credit_types")?,
        debit_types: types(raw.debit_types.as_ref(), key, "debit_types")?,
        event_id_path: path(raw.event_id_path.as_deref(), key, "event_id_path")?,
        type_path: path(raw.type_path.as_deref(), key, "type_path")?,
    };
    if let (Some(credits), Some(debits)) = (&mapping.credit_types, &mapping.debit_types)
        && let Some(both) = credits.iter().find(|t| debits.contains(t))
    {
        return Err(ConfigError::new(
            format!("{key}.debit_types"),
            format!("{both:?} is listed as a credit type too"),
        ));
    }
    super::payments::check_types(raw, provider, &mapping, key)?;
    let enabled = enabled_rules(provider.rules(), &mapping);
    let reverses = |basis| {
        enabled
            .iter()
            .any(|r: &&Rule| r.effect == Effect::Reverse(basis))
    };
    // A running total and a per-refund amount describe the same refunds:
    // both enabled would debit each refund twice.
    if reverses(Basis::Each) && reverses(Basis::Total) {
        let totals: Vec<_> = enabled
            .iter()
            .filter(|r| r.effect == Effect::Reverse(Basis::Total))
            .map(|r| r.event_type)
            .collect();
        return Err(ConfigError::new(
            format!("{key}.debit_types"),
            format!(
                "{} report(s) the running refund total and the other refund types each \
                 refund: map one or the other, never both (each refund would be debited twice)",
                totals.join(", ")
            ),
        ));
    }
    Ok(mapping)
}

/// Whether the source's mapped types name provider payments (credit them,
/// or reverse them), by the kind's rules or the source's own paths.
pub fn links_payments(provider: &dyn Provider, mapping: &Mapping) -> bool {
    mapping.payment_path.is_some()
        || mapping.reverses_path.is_some()
        || enabled_rules(provider.rules(), mapping)
            .iter()
            .any(|r| !r.payment.is_empty())
}

pub fn negative_balance(
    raw: &RawSource,
    mode: OrderingMode,
    key: &str,
) -> Result<NegativeBalance, ConfigError> {
    match (mode, raw.negative_balance) {
        // An ordered stream is the sender's own account of the balance: every
        // number is applied as sent, and holding one would stop the stream.
        (OrderingMode::Contiguous, Some(NegativeBalance::Hold)) => Err(ConfigError::new(
            format!("{key}.negative_balance"),
            "contiguous streams apply every number as sent; negative_balance must be \"allow\"",
        )),
        (OrderingMode::Contiguous, _) => Ok(NegativeBalance::Allow),
        (OrderingMode::HighWater, policy) => Ok(policy.unwrap_or(NegativeBalance::Hold)),
    }
}

pub fn settings(
    raw: &RawSource,
    provider: &dyn Provider,
    key: &str,
) -> Result<KindSettings, ConfigError> {
    let settings = KindSettings {
        notification_url: raw.notification_url.clone(),
        webhook_id: raw.webhook_id.clone(),
        generic: super::generic::scheme(raw, key)?,
    };
    provider
        .check_settings(&settings)
        .map_err(|e| ConfigError::new(format!("{key}.{}", e.key), e.message))?;
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use crate::config::{ConfigError, from_toml};
    use crate::domain::NegativeBalance;

    fn source(lines: &str) -> Result<crate::source::Source, ConfigError> {
        let text = format!(
            "[admin]\ntoken = \"admin-token-0123456789\"\n[[sources]]\nname = \"s\"\n{lines}\n"
        );
        from_toml(&text, &|_| None).map(|mut c| c.sources.remove(0))
    }

    fn error(lines: &str) -> String {
        source(lines).unwrap_err().to_string()
    }

    const STRIPE: &str = "kind = \"stripe\"\nsecrets = [\"whsec_x\"]";
    const SW: &str = "kind = \"standard-webhooks\"\nsecrets = [\"whsec_YWJj\"]";

    #[test]
    fn running_totals_and_per_refund_types_never_map_together() {
        assert!(source(&format!("{STRIPE}\ndebit_types = [\"charge.refunded\"]")).is_ok());
        assert_eq!(
            error(&format!(
                "{STRIPE}\ndebit_types = [\"charge.refunded\", \"refund.created\"]"
            )),
            "config error: sources[s].debit_types: charge.refunded report(s) the running refund \
             total and the other refund types each refund: map one or the other, never both \
             (each refund would be debited twice)"
        );
    }

    #[test]
    fn a_type_is_a_credit_or_a_debit_not_both() {
        assert_eq!(
            error(&format!(
                "{SW}\ncredit_types = [\"a\", \"b\"]\ndebit_types = [\"b\"]"
            )),
            "config error: sources[s].debit_types: \"b\" is listed as a credit type too"
        );
    }

    #[test]
    fn negative_balance_defaults_to_hold_and_contiguous_streams_allow() {
        assert_eq!(source(SW).unwrap().negative_balance, NegativeBalance::Hold);
        let allow = source(&format!("{SW}\nnegative_balance = \"allow\"")).unwrap();
        assert_eq!(allow.negative_balance, NegativeBalance::Allow);
        let ordered = source(&format!("{SW}\nordering = \"contiguous\"")).unwrap();
        assert_eq!(ordered.negative_balance, NegativeBalance::Allow);
        assert!(
            error(&format!(
                "{SW}\nordering = \"contiguous\"\nnegative_balance = \"hold\""
            ))
            .contains("negative_balance must be \"allow\"")
        );
    }

    #[test]
    fn paths_parse_and_name_their_key() {
        let mapped = source(&format!(
            "{SW}\namount_path = \"data.total\"\namount_format = \"decimal\"\nobject_path = \"data.id\""
        ))
        .unwrap();
        assert_eq!(mapped.mapping.amount_path.unwrap().as_str(), "data.total");
        assert!(error(&format!("{SW}\ncurrency_path = \"data..c\"")).contains("currency_path"));
        assert!(
            error(&format!("{SW}\namount_format = \"float\"")).contains("unknown variant `float`")
        );
    }
}
