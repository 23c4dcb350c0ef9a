//! A source's payment paths, for kinds whose payloads are the sender's own
//! design (`generic-hmac`, `standard-webhooks`): `payment_path`, where a
//! credit names the payment it is, and `reverses_path`, where a debit names
//! the payment it reverses. Checked against the types the source maps, so
//! that a source whose debits are refunds can match every one of them.

use super::ConfigError;
use super::raw::RawSource;
use crate::providers::{JsonPath, Mapping, Provider, mapped_rules};

/// The two paths as configured, `payment_path` defaulting to `object_path`
/// where the source reverses payments: a sender whose refunds name their
/// payment names it on the credit too, as the object the credit is about
/// (every kind's credit rule reads its payment where its object is). A
/// source that reverses nothing keeps its credits as movements of their
/// own, as before these keys existed.
pub(super) fn paths(
    raw: &RawSource,
    provider: &dyn Provider,
    key: &str,
    object_path: Option<&JsonPath>,
) -> Result<(Option<JsonPath>, Option<JsonPath>), ConfigError> {
    let parse = |text: Option<&str>, name: &str| {
        let err = |message: String| ConfigError::new(format!("{key}.{name}"), message);
        text.map(|text| {
            if !provider.payments_configured() {
                return Err(err(format!(
                    "kind {} finds the payments in its own events; only generic-hmac and \
                     standard-webhooks sources set {name}",
                    provider.kind()
                )));
            }
            JsonPath::parse(text).map_err(|e| err(e.to_string()))
        })
        .transpose()
    };
    let payment_path = parse(raw.payment_path.as_deref(), "payment_path")?;
    let reverses_path = parse(raw.reverses_path.as_deref(), "reverses_path")?;
    let payment_path = match (payment_path, &reverses_path) {
        (Some(path), _) => Some(path),
        (None, Some(_)) => object_path.cloned(),
        (None, None) => None,
    };
    Ok((payment_path, reverses_path))
}

/// Each path needs the types it reads: a refund needs debit types to be
/// one, and a credit that names its payment credit types; and refunds need
/// credits that name payments, else not one of them could ever be matched.
pub(super) fn check_types(
    raw: &RawSource,
    provider: &dyn Provider,
    mapping: &Mapping,
    key: &str,
) -> Result<(), ConfigError> {
    let mapped = mapped_rules(provider.rules(), mapping);
    let credits = mapped.iter().any(|(_, rule)| rule.effect.is_credit());
    let debits = mapped.iter().any(|(_, rule)| !rule.effect.is_credit());
    let err = |name: &str, message: &str| ConfigError::new(format!("{key}.{name}"), message);
    if mapping.reverses_path.is_some() && !debits {
        return Err(err(
            "reverses_path",
            "names the payment a debit reverses, but this source maps no debit type: list \
             the refund types in debit_types",
        ));
    }
    if raw.payment_path.is_some() && !credits {
        return Err(err(
            "payment_path",
            "names the payment a credit is, but this source maps no credit type: list the \
             payment types in credit_types",
        ));
    }
    if mapping.reverses_path.is_some() && credits && mapping.payment_path.is_none() {
        return Err(err(
            "payment_path",
            "this source's debits reverse payments (reverses_path), but its credits name \
             none, so no refund could ever be matched: set payment_path (where a credit \
             names its payment) or object_path",
        ));
    }
    Ok(())
}
