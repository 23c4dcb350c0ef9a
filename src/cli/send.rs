//! `hookledger send`: builds a sample event in the provider's format, signs it
//! with the provider's own scheme (the same code the tests use) and POSTs it.

use chrono::Utc;
use clap::Args;

use crate::config::random_bytes;
use crate::providers::{Sample, provider_for};
use crate::secret::Secret;

#[derive(Debug, Clone, Args)]
pub struct SendArgs {
    /// Webhook URL, e.g. http://127.0.0.1:8080/webhooks/demo (plain HTTP).
    #[arg(long)]
    pub url: String,
    /// Source kind whose format and signature to use.
    #[arg(long, default_value = "standard-webhooks")]
    pub kind: String,
    /// Signing secret (whsec_...).
    #[arg(long, env = "HOOKLEDGER_SEND_SECRET", hide_env_values = true)]
    pub secret: String,
    #[arg(long)]
    pub account: String,
    /// Amount in minor units (1500 = 15.00 USD).
    #[arg(long, allow_negative_numbers = true)]
    pub amount: i64,
    #[arg(long, default_value = "USD")]
    pub currency: String,
    /// Ordering key; default: the signed timestamp.
    #[arg(long)]
    pub sequence: Option<i64>,
    /// Event id; default: a fresh random one. Repeat an id to see a duplicate.
    #[arg(long)]
    pub event_id: Option<String>,
    /// Event type; default: the kind's credit type.
    #[arg(long = "type")]
    pub event_type: Option<String>,
    /// Signed timestamp (unix seconds); default: now.
    #[arg(long)]
    pub timestamp: Option<i64>,
}

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
    let provider = provider_for(kind).ok_or_else(|| format!("unknown kind {kind:?}"))?;
    let body = provider.sample_body(sample);
    sign_body(kind, secret, body, &sample.event_id, sample.timestamp)
}

/// Signs any body exactly as a `kind` sender would.
pub fn sign_body(
    kind: &str,
    secret: &Secret,
    body: Vec<u8>,
    event_id: &str,
    timestamp: i64,
) -> Result<SignedRequest, String> {
    let provider = provider_for(kind).ok_or_else(|| format!("unknown kind {kind:?}"))?;
    let key = provider
        .key_from_secret(secret)
        .map_err(|e| format!("--secret {e}"))?;
    let headers = provider.sign(&key, &body, event_id, timestamp);
    Ok(SignedRequest { body, headers })
}

fn fresh_event_id(kind: &str) -> Result<String, String> {
    let prefix = if kind == "stripe" { "evt" } else { "msg" };
    let bytes = random_bytes::<12>().map_err(|e| e.to_string())?;
    Ok(format!("{prefix}_{}", hex::encode(bytes)))
}

pub async fn run(args: SendArgs) -> Result<(), String> {
    let sample = Sample {
        event_id: args
            .event_id
            .clone()
            .map_or_else(|| fresh_event_id(&args.kind), Ok)?,
        event_type: args.event_type.clone(),
        account_id: args.account.clone(),
        amount_minor: args.amount,
        currency: args.currency.clone(),
        sequence: args.sequence,
        timestamp: args.timestamp.unwrap_or_else(|| Utc::now().timestamp()),
    };
    let signed = signed_sample(&args.kind, &Secret::new(args.secret.clone()), &sample)?;
    let mut request = reqwest::Client::new()
        .post(&args.url)
        .header("content-type", "application/json")
        .body(signed.body);
    for (name, value) in &signed.headers {
        request = request.header(*name, value);
    }
    let response = request
        .send()
        .await
        .map_err(|e| format!("cannot reach {}: {e}", args.url))?;
    let status = response.status();
    let text = response.text().await.map_err(|e| e.to_string())?;
    println!("sent {} ({}) -> HTTP {status}", sample.event_id, args.kind);
    println!("{text}");
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("the receiver answered {status}"))
    }
}
