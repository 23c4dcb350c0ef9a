//! Signing a body or a sample exactly as a provider's sender would: the
//! code `hookledger send` and the tests share.

use crate::providers::{KindSettings, Sample, Unsigned, provider_for};
use crate::secret::Secret;

/// A signed request, ready to send.
#[derive(Debug, Clone)]
pub struct SignedRequest {
    pub body: Vec<u8>,
    pub headers: Vec<(&'static str, String)>,
}

/// Builds and signs a sample event exactly as a `kind` sender would.
pub fn signed_sample(
    kind: &str,
    secret: &Secret,
    sample: &Sample,
) -> Result<SignedRequest, String> {
    signed_sample_with(kind, secret, sample, &KindSettings::default())
}

/// [`signed_sample`] for a kind that signs per-source settings too.
pub fn signed_sample_with(
    kind: &str,
    secret: &Secret,
    sample: &Sample,
    settings: &KindSettings,
) -> Result<SignedRequest, String> {
    let provider = provider_for(kind).ok_or_else(|| format!("unknown kind {kind:?}"))?;
    let body = provider.sample_body(sample);
    sign_body_with(
        kind,
        secret,
        body,
        &sample.event_id,
        sample.timestamp,
        settings,
    )
}

/// Signs any body exactly as a `kind` sender would.
pub fn sign_body(
    kind: &str,
    secret: &Secret,
    body: Vec<u8>,
    event_id: &str,
    timestamp: i64,
) -> Result<SignedRequest, String> {
    sign_body_with(
        kind,
        secret,
        body,
        event_id,
        timestamp,
        &KindSettings::default(),
    )
}

/// [`sign_body`] with the source's settings (Square's notification URL).
pub fn sign_body_with(
    kind: &str,
    secret: &Secret,
    body: Vec<u8>,
    event_id: &str,
    timestamp: i64,
    settings: &KindSettings,
) -> Result<SignedRequest, String> {
    let provider = provider_for(kind).ok_or_else(|| format!("unknown kind {kind:?}"))?;
    let key = provider
        .keys_from_secret(secret)
        .map_err(|e| format!("--secret {e}"))?
        .into_iter()
        .next()
        .ok_or("--secret gives no key")?;
    let signed = provider.sign(
        &key,
        Unsigned {
            body,
            event_id,
            timestamp,
            settings,
        },
    );
    Ok(SignedRequest {
        body: signed.body,
        headers: signed.headers,
    })
}
