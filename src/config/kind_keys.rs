//! The source keys that belong to one kind ([`Provider::own_keys`]): on a
//! source of another kind they would be read by nothing, so a mistake
//! (a Square key on a Stripe source) would pass unnoticed. They are
//! refused, naming the kinds that read them.

use super::ConfigError;
use super::raw::RawSource;
use crate::providers::{Provider, known_kinds, provider_for};

/// Whether `raw` sets the kind-owned key `name`; `None` for a name that is
/// not one (a test holds every kind's `own_keys` to this list).
fn is_set(raw: &RawSource, name: &str) -> Option<bool> {
    let set = match name {
        "notification_url" => raw.notification_url.is_some(),
        "webhook_id" => raw.webhook_id.is_some(),
        "certificates" => raw.certificates.is_some(),
        "signature_header" => raw.signature_header.is_some(),
        "signature_prefix" => raw.signature_prefix.is_some(),
        "algorithm" => raw.algorithm.is_some(),
        "encoding" => raw.encoding.is_some(),
        "signed_payload" => raw.signed_payload.is_some(),
        "timestamp_header" => raw.timestamp_header.is_some(),
        "id_header" => raw.id_header.is_some(),
        _ => return None,
    };
    Some(set)
}

/// The kinds that read `name`, by config name.
pub fn owners(name: &str) -> Vec<&'static str> {
    known_kinds()
        .filter(|kind| {
            provider_for(kind).is_some_and(|provider| provider.own_keys().contains(&name))
        })
        .collect()
}

/// Every key some kind owns.
pub fn owned_keys() -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = known_kinds()
        .filter_map(provider_for)
        .flat_map(|provider| provider.own_keys().iter().copied())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// One problem per key of another kind that `raw` sets.
pub(super) fn refused(raw: &RawSource, provider: &dyn Provider, key: &str) -> Vec<ConfigError> {
    owned_keys()
        .into_iter()
        .filter(|name| is_set(raw, name) == Some(true) && !provider.own_keys().contains(name))
        .map(|name| {
            ConfigError::new(
                format!("{key}.{name}"),
                format!(
                    "kind {} does not read {name}; only {} sources do",
                    provider.kind(),
                    owners(name).join(" and ")
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::from_toml;

    #[test]
    fn every_owned_key_is_one_this_file_reads() {
        let raw = RawSource::default();
        for name in owned_keys() {
            assert_eq!(is_set(&raw, name), Some(false), "{name}");
        }
        assert_eq!(is_set(&raw, "secrets"), None);
    }

    fn errors(kind: &str, lines: &str) -> String {
        let text = format!(
            "[admin]\ntoken = \"admin-token-0123456789\"\n[[sources]]\nname = \"s\"\n\
             kind = \"{kind}\"\nsecrets = [\"whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=\"]\n{lines}\n"
        );
        match from_toml(&text, &|_| None) {
            Ok(_) => String::new(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn another_kinds_key_is_refused_naming_its_kind() {
        let square = errors(
            "stripe",
            "notification_url = \"https://h.example/webhooks/s\"",
        );
        assert!(
            square.contains(
                "sources[s].notification_url: kind stripe does not read notification_url; \
                 only square sources do"
            ),
            "{square}"
        );
        let scheme = errors(
            "standard-webhooks",
            "algorithm = \"sha512\"\nid_header = \"X-Id\"",
        );
        assert!(scheme.contains("sources[s].algorithm: kind standard-webhooks does not read algorithm; only generic-hmac sources do"), "{scheme}");
        assert!(scheme.contains("sources[s].id_header"), "{scheme}");
        let paypal = errors("stripe", "webhook_id = \"WH-1\"");
        assert!(paypal.contains("only paypal sources do"), "{paypal}");
        assert_eq!(errors("stripe", ""), "");
    }
}
