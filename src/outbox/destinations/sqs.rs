//! `kind = "sqs"`: Amazon SQS, through the official AWS SDK for Rust. To a
//! FIFO queue (a name ending `.fifo`) each message goes with
//! `MessageDeduplicationId` = the message id, so SQS drops a re-send
//! within its five-minute deduplication interval, and `MessageGroupId` =
//! the account, so one account's messages are received in the order sent
//! (a message with no account is a group of its own). A re-send inside
//! that interval (a replay, say) is acknowledged by SQS and so recorded
//! as delivered, though SQS keeps only the first copy. To a standard queue
//! it goes plainly: no order, no deduplication. Every message carries the
//! attributes `id` and `type`. Success is SQS's answer to `SendMessage`.
//! Credentials come from the standard AWS chain (environment, profile,
//! web identity, container or instance role); none is in the config.

use std::sync::Arc;
use std::time::Duration;

use aws_config::{BehaviorVersion, Region};
use aws_sdk_sqs::Client;
use aws_sdk_sqs::error::DisplayErrorContext;
use aws_sdk_sqs::types::MessageAttributeValue;
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode};
use schemars::JsonSchema;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

use super::deliver::{Deliver, DestinationKind, Outgoing, SendError, Sending};
use crate::config::{ConfigError, Env, kind_settings, plain_url};

/// The keys of `kind = "sqs"`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Settings {
    /// The queue: `https://sqs.<region>.amazonaws.com/<account>/<name>`; a
    /// name ending `.fifo` is a FIFO queue (deduplication and order).
    #[schemars(extend("pattern" = "^https?://"))]
    queue_url: Option<String>,
    /// The AWS region; read from `queue_url` when it is an AWS address.
    region: Option<String>,
    /// Another SQS endpoint (a VPC endpoint, a local SQS for tests).
    #[schemars(extend("pattern" = "^https?://"))]
    endpoint: Option<String>,
}

/// Where an `sqs` destination sends.
#[derive(Debug, Clone)]
struct SqsKind {
    queue_url: String,
    region: String,
    endpoint: Option<String>,
    fifo: bool,
}

/// Reads and checks an `sqs` destination's keys.
pub fn parse(
    settings: toml::Table,
    _env: Env<'_>,
    key: &str,
) -> Result<Arc<dyn DestinationKind>, ConfigError> {
    let Settings {
        queue_url,
        region,
        endpoint,
    } = kind_settings(settings, key)?;
    let at = format!("{key}.queue_url");
    let queue_url = queue_url.ok_or_else(|| ConfigError::new(&at, "is required"))?;
    plain_url(&queue_url, &["https", "http"], key).map_err(|e| ConfigError::new(&at, e.message))?;
    let path: Vec<&str> = queue_url
        .split_once("://")
        .map_or("", |(_, rest)| rest)
        .split('/')
        .skip(1)
        .collect();
    if queue_url.contains(['?', '#']) || path.len() != 2 || path.iter().any(|p| p.is_empty()) {
        return Err(ConfigError::new(
            at,
            "must be https://<host>/<account>/<queue name>",
        ));
    }
    let fifo = path[1].ends_with(".fifo");
    let in_url = region_of(&queue_url);
    // The SDK sends to the endpoint of `region` (or `endpoint`), not to the
    // URL's host: the two must agree, or every send fails, or goes to AWS
    // when the queue is elsewhere.
    let region = match (region, &in_url, &endpoint) {
        (Some(region), Some(in_url), _) if &region != in_url => {
            return Err(ConfigError::new(
                format!("{key}.region"),
                format!("is {region:?}, but queue_url is in {in_url:?}"),
            ));
        }
        (_, Some(in_url), _) => in_url.clone(),
        (Some(region), None, Some(_)) => region,
        (None, None, Some(_)) => {
            return Err(ConfigError::new(
                format!("{key}.region"),
                "is required: queue_url is not an AWS address it could be read from",
            ));
        }
        (_, None, None) => {
            return Err(ConfigError::new(
                format!("{key}.endpoint"),
                "is required: queue_url is not sqs.<region>.amazonaws.com, and without \
                 it the SDK would send to AWS's own endpoint",
            ));
        }
    };
    if region.is_empty()
        || !region
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(ConfigError::new(
            format!("{key}.region"),
            "is not a region name (lower case, like eu-west-1)",
        ));
    }
    if let Some(endpoint) = &endpoint {
        plain_url(endpoint, &["https", "http"], key)
            .map_err(|e| ConfigError::new(format!("{key}.endpoint"), e.message))?;
    }
    Ok(Arc::new(SqsKind {
        queue_url,
        region,
        endpoint,
        fifo,
    }))
}

/// The region in an AWS queue URL: `https://sqs.<region>.amazonaws.com/...`
/// (`.com.cn` in China).
fn region_of(queue_url: &str) -> Option<String> {
    let host = queue_url.split_once("://")?.1.split('/').next()?;
    let rest = host.strip_prefix("sqs.")?;
    let region = rest
        .strip_suffix(".amazonaws.com")
        .or_else(|| rest.strip_suffix(".amazonaws.com.cn"))?;
    (!region.is_empty() && !region.contains('.')).then(|| region.to_owned())
}

/// A value SQS takes as a deduplication id or group id (1-128 printable
/// ASCII characters, no space); any other is replaced by its SHA-256, so
/// that the same value always gives the same token.
fn token(value: &str) -> String {
    if (1..=128).contains(&value.len()) && value.bytes().all(|b| b.is_ascii_graphic()) {
        value.to_owned()
    } else {
        format!("sha256:{}", hex::encode(Sha256::digest(value.as_bytes())))
    }
}

impl DestinationKind for SqsKind {
    fn describe(&self) -> String {
        let mut text = format!("sqs {}, region {}", self.queue_url, self.region);
        if let Some(endpoint) = &self.endpoint {
            text.push_str(&format!(", endpoint {endpoint}"));
        }
        text.push_str(if self.fifo {
            ", FIFO: deduplicated by message id, grouped by account"
        } else {
            ", standard queue: no order, no deduplication"
        });
        text
    }

    fn sender(&self, timeout: Duration) -> Box<dyn Deliver> {
        Box::new(Sqs {
            kind: self.clone(),
            timeout,
            client: OnceCell::new(),
        })
    }
}

pub struct Sqs {
    kind: SqsKind,
    timeout: Duration,
    client: OnceCell<Client>,
}

impl Sqs {
    /// The client, made on first use: the credential chain is read then,
    /// and refreshed by the SDK as credentials expire.
    async fn client(&self) -> &Client {
        self.client
            .get_or_init(|| async {
                // rustls with ring, as the rest of hookledger's TLS.
                let http = aws_smithy_http_client::Builder::new()
                    .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
                    .build_https();
                let mut loader = aws_config::defaults(BehaviorVersion::latest())
                    .http_client(http)
                    .region(Region::new(self.kind.region.clone()));
                if let Some(endpoint) = &self.kind.endpoint {
                    loader = loader.endpoint_url(endpoint);
                }
                Client::new(&loader.load().await)
            })
            .await
    }

    async fn send(&self, message: &Outgoing<'_>) -> Result<(), SendError> {
        let body = std::str::from_utf8(message.body)
            .map_err(|_| SendError::new("the message body is not UTF-8"))?;
        let attribute = |value: &str| {
            MessageAttributeValue::builder()
                .data_type("String")
                .string_value(value)
                .build()
                .map_err(|e| SendError::new(format!("message attribute: {e}")))
        };
        let mut request = self
            .client()
            .await
            .send_message()
            .queue_url(&self.kind.queue_url)
            .message_body(body)
            .message_attributes("id", attribute(message.id)?)
            .message_attributes("type", attribute(message.message_type)?);
        if self.kind.fifo {
            request = request
                .message_deduplication_id(token(message.id))
                .message_group_id(token(message.account.unwrap_or(message.id)));
        }
        request
            .send()
            .await
            .map(drop)
            .map_err(|e| SendError::new(format!("SendMessage: {}", DisplayErrorContext(&e))))
    }
}

impl Deliver for Sqs {
    fn deliver<'a>(&'a self, message: &'a Outgoing<'a>) -> Sending<'a> {
        Box::pin(async move {
            match tokio::time::timeout(self.timeout, self.send(message)).await {
                Ok(sent) => sent,
                Err(_) => Err(SendError::new("SendMessage: no answer in time")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(settings: toml::Table) -> Result<Arc<dyn DestinationKind>, ConfigError> {
        parse(settings, &|_| None, "destinations[sqs]")
    }

    #[test]
    fn the_region_is_read_from_an_aws_queue_url() {
        let kind = parsed(toml::toml! {
            queue_url = "https://sqs.eu-west-1.amazonaws.com/123456789012/ledger.fifo"
        })
        .unwrap();
        assert!(kind.describe().contains("region eu-west-1"));
        assert!(kind.describe().contains("FIFO"));
        let standard = parsed(toml::toml! {
            queue_url = "https://sqs.us-east-2.amazonaws.com/123456789012/ledger"
            region = "us-east-2"
        })
        .unwrap();
        assert!(standard.describe().contains("standard queue"));
        let china = parsed(toml::toml! {
            queue_url = "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/ledger.fifo"
        })
        .unwrap();
        assert!(china.describe().contains("region cn-north-1"));
        let local = parsed(toml::toml! {
            queue_url = "http://127.0.0.1:5000/123456789012/ledger.fifo"
            endpoint = "http://127.0.0.1:5000"
        })
        .unwrap_err();
        assert_eq!(local.key, "destinations[sqs].region");
        assert!(
            parsed(toml::toml! {
                queue_url = "http://127.0.0.1:5000/123456789012/ledger.fifo"
                region = "us-east-1"
                endpoint = "http://127.0.0.1:5000"
            })
            .is_ok()
        );
    }

    #[test]
    fn a_bad_queue_url_region_or_endpoint_is_refused() {
        for (settings, at) in [
            (toml::toml! { region = "eu-west-1" }, "queue_url"),
            (toml::toml! { queue_url = "sqs://x/1/q" }, "queue_url"),
            (
                toml::toml! { queue_url = "https://sqs.eu-west-1.amazonaws.com/" },
                "queue_url",
            ),
            (
                toml::toml! { queue_url = "https://h/1/q" region = "eu west" endpoint = "https://h" },
                "region",
            ),
            (
                toml::toml! { queue_url = "https://sqs.eu-west-1.amazonaws.com/1/" },
                "queue_url",
            ),
            (
                toml::toml! { queue_url = "https://sqs.eu-west-1.amazonaws.com/1/q?x=1" },
                "queue_url",
            ),
            (
                toml::toml! { queue_url = "https://sqs.eu-west-1.amazonaws.com/1/q/r" },
                "queue_url",
            ),
            (
                toml::toml! { queue_url = "https://sqs.eu-west-1.amazonaws.com/1/q" region = "us-east-1" },
                "region",
            ),
            // Not an AWS address and no endpoint: the SDK would send to AWS.
            (
                toml::toml! { queue_url = "https://h/1/q" region = "eu-west-1" },
                "endpoint",
            ),
            (
                toml::toml! { queue_url = "https://sqs-fips.us-east-1.amazonaws.com/1/q" },
                "endpoint",
            ),
            (
                toml::toml! { queue_url = "https://h/1/q" region = "EU-WEST-1" endpoint = "https://h" },
                "region",
            ),
            (
                toml::toml! { queue_url = "https://h/1/q" region = "x" endpoint = "ftp://h" },
                "endpoint",
            ),
        ] {
            let error = parsed(settings).unwrap_err();
            assert_eq!(error.key, format!("destinations[sqs].{at}"));
        }
    }

    #[test]
    fn ids_and_groups_sqs_cannot_take_are_hashed_the_same_way_each_time() {
        assert_eq!(token("msg_01HZX"), "msg_01HZX");
        assert_eq!(token("cus_1/a:b"), "cus_1/a:b");
        let spaced = token("acct 1");
        assert!(spaced.starts_with("sha256:") && spaced.len() == 71);
        assert_eq!(token("acct 1"), spaced);
        assert_ne!(token("acct 2"), spaced);
        assert!(token(&"a".repeat(129)).starts_with("sha256:"));
        assert!(token("compte-é").starts_with("sha256:"));
    }
}
