//! A source's verification keys: from its secrets, or for a kind that
//! verifies with certificates (PayPal), from its certificate files.

use super::error::Problems;
use super::raw::RawSource;
use super::secrets::origin_of;
use super::{ConfigError, Env, resolve_secret};
use crate::secret::Secret;

/// The source's verification keys, from its secrets, or for a kind that
/// verifies with certificates, from its certificate files; and for each key
/// the position of the secret or certificate it came from.
pub(super) fn keys(
    raw: &RawSource,
    provider: &dyn crate::providers::Provider,
    env: Env<'_>,
    key: &str,
) -> Result<(Vec<crate::secret::KeyBytes>, Vec<usize>), ConfigError> {
    let certificates = raw.certificates.clone().unwrap_or_default();
    let values: Vec<(String, Secret)> = if provider.verifies_with_certificates() {
        if !raw.secrets.is_empty() {
            return Err(ConfigError::new(
                format!("{key}.secrets"),
                format!(
                    "kind {} verifies with certificates, not secrets: set certificates = [\"paypal.pem\"]",
                    provider.kind()
                ),
            ));
        }
        if certificates.is_empty() {
            return Err(ConfigError::new(
                format!("{key}.certificates"),
                "no certificate configured: set certificates = [\"<PEM file>\"] (the \
                 certificate PayPal signs webhooks with, downloaded once and kept here)",
            ));
        }
        certificates
            .iter()
            .enumerate()
            .map(|(i, path)| {
                let item = format!("{key}.certificates[{i}]");
                std::fs::read_to_string(path)
                    .map(|pem| (item.clone(), Secret::new(pem)))
                    .map_err(|e| ConfigError::new(item, format!("cannot read {path}: {e}")))
            })
            .collect::<Result<_, _>>()?
    } else {
        // Certificates on another kind are refused by `kind_keys`.
        if raw.secrets.is_empty() {
            return Err(ConfigError::new(
                format!("{key}.secrets"),
                format!(
                    "no webhook secret configured: set secrets = [\"...\"] or {}",
                    super::env::source_var(&raw.name, "SECRETS")
                ),
            ));
        }
        let mut problems = Problems::default();
        let values = raw
            .secrets
            .iter()
            .enumerate()
            .filter_map(|(i, value)| {
                let item = format!("{key}.secrets[{i}]");
                problems.take(resolve_secret(value, env, &item).map(|secret| (item, secret)))
            })
            .collect();
        problems.into_result()?;
        values
    };
    let mut keys = Vec::new();
    let mut key_secrets = Vec::new();
    let mut problems = Problems::default();
    for (i, (item, secret)) in values.into_iter().enumerate() {
        let Some(derived) = problems.take(
            provider
                .keys_from_secret(&secret)
                .map_err(|e| ConfigError::new(item, e)),
        ) else {
            continue;
        };
        key_secrets.extend(std::iter::repeat_n(i, derived.len()));
        keys.extend(derived);
    }
    problems.into_result()?;
    Ok((keys, key_secrets))
}

/// Where each of the source's secrets or certificates comes from.
pub(super) fn origins(raw: &RawSource) -> Vec<String> {
    if let Some(certificates) = &raw.certificates
        && !certificates.is_empty()
    {
        return certificates
            .iter()
            .map(|path| format!("certificate file {path}"))
            .collect();
    }
    raw.secrets
        .iter()
        .map(
            |value| match (&raw.secrets_from, value.strip_prefix("env:")) {
                (_, Some(_)) => origin_of(value),
                (Some(origin), None) => origin.clone(),
                (None, None) => origin_of(value),
            },
        )
        .collect()
}
