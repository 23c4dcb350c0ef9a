//! `hookledger send`: builds a sample event in the provider's format, signs it
//! with the provider's own scheme (the same code the tests use) and POSTs it.

use chrono::Utc;
use clap::Args;

use std::path::Path;

use crate::config::random_bytes;
use crate::providers::{KindSettings, Provider, Sample, Unsigned, known_kinds, provider_for};
use crate::secret::{KeyBytes, Secret};
use crate::source::Source;

#[derive(Debug, Clone, Args)]
pub struct SendArgs {
    /// A configured source to send to: its kind, first secret, settings and
    /// URL (from `listen`) come from the config (without a config file, the
    /// demo's, from data/).
    #[arg(long)]
    pub source: Option<String>,
    /// Webhook URL, e.g. http://127.0.0.1:8080/webhooks/demo (plain HTTP);
    /// with --source, overrides the one derived from the config.
    #[arg(long, required_unless_present = "source")]
    pub url: Option<String>,
    /// Source kind whose format and signature to use; default: the
    /// source's, else standard-webhooks.
    #[arg(long)]
    pub kind: Option<String>,
    /// Signing secret (whsec_...); default with --source: its first secret.
    #[arg(
        long,
        env = "HOOKLEDGER_SEND_SECRET",
        hide_env_values = true,
        conflicts_with = "secret_file"
    )]
    pub secret: Option<String>,
    /// Read the signing secret from this file (a PEM private key for
    /// PayPal).
    #[arg(long)]
    pub secret_file: Option<std::path::PathBuf>,
    #[arg(long, default_value = "acct_1")]
    pub account: String,
    /// Amount in minor units (1500 = 15.00 USD).
    #[arg(long, allow_negative_numbers = true, default_value_t = 1500)]
    pub amount: i64,
    #[arg(long, default_value = "USD")]
    pub currency: String,
    /// Ordering key; default: the signed timestamp (with --count: 1).
    #[arg(long)]
    pub sequence: Option<i64>,
    /// Send this many events for the account, numbered from --sequence on,
    /// with ids <event-id>-<sequence>: a contiguous stream to watch.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub count: u32,
    /// With --count: send the events in a random order, as a provider
    /// retrying after an outage would.
    #[arg(long)]
    pub shuffle: bool,
    /// With --count: leave this sequence number out (repeatable), to watch
    /// the events after it wait for it.
    #[arg(long)]
    pub omit: Vec<i64>,
    /// Event id; default: a fresh random one. Repeat an id to see a duplicate.
    #[arg(long)]
    pub event_id: Option<String>,
    /// Event type; default: the kind's credit type.
    #[arg(long = "type")]
    pub event_type: Option<String>,
    /// The provider payment a credit is, or a refund or dispute reverses
    /// (send a credit and then a refund with the same --payment).
    #[arg(long)]
    pub payment: Option<String>,
    /// Square: the notification URL the subscription has; default: --url.
    #[arg(long)]
    pub notification_url: Option<String>,
    /// PayPal: the webhook id the source is configured with (the --secret
    /// is then a PEM private key whose certificate the source trusts).
    #[arg(long)]
    pub webhook_id: Option<String>,
    /// Signed timestamp (unix seconds); default: now.
    #[arg(long)]
    pub timestamp: Option<i64>,
}

fn fresh_event_id(kind: &str) -> Result<String, String> {
    let prefix = if kind == "stripe" { "evt" } else { "msg" };
    let bytes = random_bytes::<12>().map_err(|e| e.to_string())?;
    Ok(format!("{prefix}_{}", hex::encode(bytes)))
}

/// The samples `args` asks for, in sending order.
fn samples(args: &SendArgs, kind: &str) -> Result<Vec<Sample>, String> {
    let event_id = args
        .event_id
        .clone()
        .map_or_else(|| fresh_event_id(kind), Ok)?;
    let timestamp = args.timestamp.unwrap_or_else(|| Utc::now().timestamp());
    let sample = |event_id: String, sequence: Option<i64>| Sample {
        event_id,
        event_type: args.event_type.clone(),
        account_id: args.account.clone(),
        amount_minor: args.amount,
        currency: args.currency.clone(),
        sequence,
        timestamp,
        payment: args.payment.clone(),
    };
    if args.count == 1 && !args.shuffle && args.omit.is_empty() {
        return Ok(vec![sample(event_id, args.sequence)]);
    }
    let first = args.sequence.unwrap_or(1);
    let mut samples: Vec<Sample> = (0..i64::from(args.count))
        .map(|i| first + i)
        .filter(|sequence| !args.omit.contains(sequence))
        .map(|sequence| sample(format!("{event_id}-{sequence}"), Some(sequence)))
        .collect();
    if args.shuffle {
        shuffle(&mut samples)?;
    }
    Ok(samples)
}

/// Fisher-Yates with the operating system's randomness.
fn shuffle<T>(items: &mut [T]) -> Result<(), String> {
    for i in (1..items.len()).rev() {
        let random = u64::from_le_bytes(random_bytes::<8>().map_err(|e| e.to_string())?);
        items.swap(i, (random % (i as u64 + 1)) as usize);
    }
    Ok(())
}

/// What a send signs with and where it goes, from the flags and, with
/// `--source`, the config.
struct Target {
    url: String,
    kind: String,
    key: KeyBytes,
    settings: KindSettings,
}

fn target(args: &SendArgs, config: Option<&Path>) -> Result<Target, String> {
    let source = match &args.source {
        Some(name) => Some(configured_source(name, config)?),
        None => None,
    };
    let kind = match (&args.kind, &source) {
        (Some(kind), _) => kind.clone(),
        (None, Some((source, _))) => source.provider.kind().to_owned(),
        (None, None) => "standard-webhooks".to_owned(),
    };
    let provider = provider_for(&kind).ok_or_else(|| {
        let known: Vec<&str> = known_kinds().collect();
        format!("unknown --kind {kind:?} (known: {})", known.join(", "))
    })?;
    let url = match (&args.url, &source) {
        (Some(url), _) => url.clone(),
        (None, Some((_, url))) => url.clone(),
        (None, None) => return Err("--url or --source is required".to_owned()),
    };
    if !url.starts_with("http://") {
        return Err(format!(
            "{url}: send speaks plain HTTP only (http://...); send to the instance itself, \
             not through a TLS proxy"
        ));
    }
    let key = signing_key(args, provider, source.as_ref().map(|(source, _)| source))?;
    let settings = match &source {
        Some((source, _)) => source.settings.clone(),
        None => KindSettings::default(),
    };
    let settings = KindSettings {
        notification_url: args
            .notification_url
            .clone()
            .or(settings.notification_url)
            .or(Some(url.clone())),
        webhook_id: args.webhook_id.clone().or(settings.webhook_id),
        generic: settings.generic,
    };
    Ok(Target {
        url,
        kind,
        key,
        settings,
    })
}

/// The configured source named `name`, and the URL it is served at.
fn configured_source(name: &str, config: Option<&Path>) -> Result<(Source, String), String> {
    let config = crate::config::load(
        config,
        &crate::config::process_env,
        &crate::outbox::destinations::check,
    )
    .map_err(|e| e.to_string())?;
    let position = config.sources.iter().position(|s| s.name.as_str() == name);
    let Some(position) = position else {
        let names: Vec<&str> = config.sources.iter().map(|s| s.name.as_str()).collect();
        return Err(format!(
            "no source {name:?} in the config (configured: {})",
            names.join(", ")
        ));
    };
    let listen = config.listen.replace("0.0.0.0:", "127.0.0.1:");
    let url = format!("http://{listen}/webhooks/{name}");
    Ok((
        config.sources.into_iter().nth(position).expect("found"),
        url,
    ))
}

/// The key to sign with: `--secret` or `--secret-file`'s, else the
/// source's first (a source verifying with certificates has none to lend).
fn signing_key(
    args: &SendArgs,
    provider: &dyn Provider,
    source: Option<&Source>,
) -> Result<KeyBytes, String> {
    let secret = match (&args.secret, &args.secret_file) {
        (Some(secret), _) => Some(Secret::new(secret.clone())),
        (None, Some(path)) => Some(Secret::new(
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read --secret-file {}: {e}", path.display()))?
                .trim()
                .to_owned(),
        )),
        (None, None) => None,
    };
    Ok(match (secret, source) {
        (Some(secret), _) => provider
            .keys_from_secret(&secret)
            .map_err(|e| format!("--secret {e}"))?
            .into_iter()
            .next()
            .ok_or("--secret gives no key")?,
        (None, Some(source)) if !source.provider.verifies_with_certificates() => source
            .keys
            .first()
            .cloned()
            .ok_or("the source has no key")?,
        (None, Some(_)) => {
            return Err(
                "this source verifies with a certificate: sign with --secret-file <private key PEM>"
                    .to_owned(),
            );
        }
        (None, None) => return Err("--secret, --secret-file or --source is required".to_owned()),
    })
}

pub async fn run(args: SendArgs, config: Option<&Path>) -> Result<(), String> {
    let target = target(&args, config)?;
    let provider = provider_for(&target.kind).ok_or("unknown kind")?;
    let client = crate::tls::build_client(|builder| builder)?;
    for sample in samples(&args, &target.kind)? {
        let signed = provider.sign(
            &target.key,
            Unsigned {
                body: provider.sample_body(&sample),
                event_id: &sample.event_id,
                timestamp: sample.timestamp,
                settings: &target.settings,
            },
        );
        let mut request = client
            .post(&target.url)
            .header("content-type", "application/json")
            // Kinds with an acknowledgement of their own (Adyen) still say
            // what happened to each event.
            .header("accept", "application/json")
            .body(signed.body);
        for (name, value) in &signed.headers {
            request = request.header(*name, value);
        }
        let response = request.send().await.map_err(|e| {
            if e.is_connect() {
                format!(
                    "cannot connect to {}: connection refused (is hookledger running there?)",
                    target.url
                )
            } else {
                format!("cannot reach {}: {e}", target.url)
            }
        })?;
        let status = response.status();
        let text = response.text().await.map_err(|e| e.to_string())?;
        let sequence = sample
            .sequence
            .map(|s| format!(", sequence {s}"))
            .unwrap_or_default();
        println!(
            "sent {} ({}{sequence}) -> HTTP {status}",
            sample.event_id, target.kind
        );
        println!("{text}");
        if !status.is_success() {
            return Err(format!("the receiver answered {status}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> SendArgs {
        #[derive(clap::Parser)]
        struct Wrapper {
            #[command(flatten)]
            send: SendArgs,
        }
        let base = [
            "send",
            "--url",
            "http://x",
            "--secret",
            "s",
            "--account",
            "a",
        ];
        let base = base
            .iter()
            .chain(["--amount", "5", "--event-id", "m"].iter());
        let parsed: Wrapper = clap::Parser::parse_from(base.chain(extra.iter()));
        parsed.send
    }

    fn sequences(samples: &[Sample]) -> Vec<i64> {
        samples.iter().filter_map(|s| s.sequence).collect()
    }

    #[test]
    fn one_event_by_default() {
        let samples = samples(&args(&["--sequence", "7"]), "standard-webhooks").unwrap();
        assert_eq!(samples.len(), 1);
        assert_eq!(
            (samples[0].event_id.as_str(), samples[0].sequence),
            ("m", Some(7))
        );
    }

    #[test]
    fn count_numbers_a_stream_and_omit_leaves_gaps() {
        let samples = samples(
            &args(&["--count", "5", "--omit", "2", "--omit", "4"]),
            "standard-webhooks",
        )
        .unwrap();
        assert_eq!(sequences(&samples), [1, 3, 5]);
        assert_eq!(samples[1].event_id, "m-3");
        let order = sequences(&samples_of(&[
            "--count",
            "50",
            "--shuffle",
            "--sequence",
            "10",
        ]));
        assert_ne!(order, (10..60).collect::<Vec<_>>(), "1 in 50! to fail");
        let mut shuffled = order;
        shuffled.sort_unstable();
        assert_eq!(shuffled, (10..60).collect::<Vec<_>>());
    }

    fn samples_of(extra: &[&str]) -> Vec<Sample> {
        samples(&args(extra), "standard-webhooks").unwrap()
    }
}
