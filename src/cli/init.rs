//! `hookledger init --kind <kind>`: writes a hookledger.toml with one source
//! of that kind, generates the admin token, and prints what to give the
//! provider (the endpoint URL) and what to set (the signing secret). It never
//! writes over an existing file.

use std::path::Path;

use clap::Args;

use super::config_schema::{SCHEMA_FILE, schema_text};
use crate::config::{DEFAULT_CONFIG_FILE, generate_admin_token};
use crate::domain::SourceName;
use crate::providers::{known_kinds, provider_for};

#[derive(Debug, Clone, Args)]
pub struct InitArgs {
    /// The provider kind of the source.
    #[arg(long, default_value = "stripe")]
    pub kind: String,
    /// The source's name: its endpoint is POST /webhooks/<name>. Default:
    /// the kind.
    #[arg(long)]
    pub name: Option<String>,
    /// Where the provider reaches this instance (https://hooks.example.com),
    /// for the endpoint URL printed and, for Square, the signed URL.
    #[arg(long)]
    pub public_url: Option<String>,
}

/// The variable a source's secret is read from: `STRIPE_EU_WEBHOOK_SECRET`.
fn secret_variable(name: &str) -> String {
    format!(
        "{}_WEBHOOK_SECRET",
        name.to_ascii_uppercase().replace('-', "_")
    )
}

/// The config text for one source of `kind` named `name`.
pub fn template(kind: &str, name: &str, public_url: &str) -> Result<String, String> {
    let provider = provider_for(kind).ok_or_else(|| {
        let known: Vec<&str> = known_kinds().collect();
        format!("unknown --kind {kind:?} (known: {})", known.join(", "))
    })?;
    let variable = secret_variable(name);
    let account = provider.default_account_path();
    let keys = if provider.verifies_with_certificates() {
        "# PayPal signs with a certificate: download it once (the PAYPAL-CERT-URL of a\n\
         # delivery) and keep it here; hookledger never fetches it.\n\
         certificates = [\"paypal-cert.pem\"]\n\
         webhook_id = \"\"   # this endpoint's webhook id in PayPal's dashboard (WH-...)\n"
            .to_owned()
    } else {
        format!(
            "# The endpoint's signing secret, from the provider's dashboard. While\n\
             # rotating, list both: any one may verify.\n\
             secrets = [\"env:{variable}\"]\n"
        )
    };
    let extra = match kind {
        "square" => format!(
            "# Square signs the notification URL exactly as registered with it.\n\
             notification_url = \"{public_url}/webhooks/{name}\"\n"
        ),
        "generic-hmac" => "# How the sender signs and what its events look like\n\
             # (docs/providers/generic-hmac.md): HMAC-SHA256 of the body, hex, in X-Signature.\n\
             signature_header = \"X-Signature\"\n\
             algorithm = \"sha256\"\n\
             encoding = \"hex\"\n\
             signed_payload = \"{body}\"\n\
             event_id_path = \"id\"\n\
             type_path = \"type\"\n\
             credit_types = [\"payment.succeeded\"]   # the sender's types that credit\n\
             amount_path = \"amount\"                 # minor units\n\
             currency_path = \"currency\"\n\
             # Events are ordered per account by this number (or by a signed\n\
             # timestamp_header): without either they cannot be applied.\n\
             sequence_path = \"sequence\"\n"
            .to_owned(),
        _ => String::new(),
    };
    Ok(format!(
        "#:schema ./{SCHEMA_FILE}\n\
         # hookledger configuration, written by `hookledger init --kind {kind}`.\n\
         # docs/configuration.md lists every key; `hookledger check-config` shows\n\
         # what will run.\n\
         \n\
         listen = \"127.0.0.1:8080\"\n\
         database_url = \"sqlite://data/hookledger.db\"   # postgres://... in production\n\
         data_dir = \"data\"                               # the admin token is kept here\n\
         \n\
         [admin]\n\
         # The token is generated in data_dir; or set token = \"env:ADMIN_SECRET\".\n\
         \n\
         [[sources]]\n\
         name = \"{name}\"          # POST /webhooks/{name}\n\
         kind = \"{kind}\"\n\
         {keys}{extra}\
         # Where each event names the account whose balance it moves:\n\
         account_path = \"{account}\"\n"
    ))
}

pub fn run(args: &InitArgs, config: Option<&Path>) -> Result<(), String> {
    let path = config.unwrap_or(Path::new(DEFAULT_CONFIG_FILE));
    if path.exists() {
        return Err(format!(
            "{} exists; init never writes over a config (move it away, or edit it)",
            path.display()
        ));
    }
    let name = args.name.clone().unwrap_or_else(|| args.kind.clone());
    SourceName::parse(&name).map_err(|e| format!("--name {name:?}: {e}"))?;
    let public = args
        .public_url
        .as_deref()
        .map(|u| u.trim_end_matches('/').to_owned());
    let shown_public = public
        .clone()
        .unwrap_or_else(|| "https://<your public host>".to_owned());
    let text = template(&args.kind, &name, &shown_public)?;
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    // Beside the config, where its `#:schema` line points: taplo-based
    // editors complete and check the file as it is typed. Generated, so
    // written over (an older binary's schema would refuse newer keys).
    let schema = path.with_file_name(SCHEMA_FILE);
    std::fs::write(&schema, schema_text())
        .map_err(|e| format!("cannot write {}: {e}", schema.display()))?;
    let token = generate_admin_token(Path::new("data"))?;
    let row = |label: &str, value: &str| format!("  {label:<20} {value}");
    println!(
        "wrote {}: one {} source, {name:?}",
        path.display(),
        args.kind
    );
    println!(
        "{}",
        row(
            "endpoint URL",
            &format!(
                "{shown_public}/webhooks/{name}  (give this to {}; locally http://127.0.0.1:8080/webhooks/{name})",
                args.kind
            )
        )
    );
    println!(
        "{}",
        row(
            "config schema",
            &format!(
                "{}  (editors with taplo check the config against it)",
                schema.display()
            )
        )
    );
    let provider = provider_for(&args.kind).expect("checked by template");
    if provider.verifies_with_certificates() {
        println!(
            "{}",
            row(
                "before starting",
                "save PayPal's certificate as paypal-cert.pem and set webhook_id"
            )
        );
    } else {
        println!(
            "{}",
            row(
                "signing secret",
                &format!(
                    "export {}=...  (the secret {} shows for this endpoint)",
                    secret_variable(&name),
                    args.kind
                )
            )
        );
    }
    println!(
        "{}",
        row(
            "admin token",
            &format!("{}  (kept in data/admin_token)", token.expose())
        )
    );
    println!(
        "{}",
        row("next", "hookledger check-config, then hookledger")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    /// `send --source` signs the kind's sample with the source's first key
    /// and settings; the source verifies it and maps it to a credit.
    fn assert_sample_credits(source: &crate::source::Source) {
        use crate::domain::Movement;
        use crate::providers::{Delivery, HeaderPairs, Sample, Unsigned, VerifyPolicy};
        let provider = source.provider;
        let now = chrono::Utc::now();
        let sample = Sample {
            event_id: "evt_init_1".into(),
            event_type: None,
            account_id: "acct_1".into(),
            amount_minor: 1500,
            currency: "USD".into(),
            sequence: Some(1),
            timestamp: now.timestamp(),
            payment: None,
        };
        let signed = provider.sign(
            &source.keys[0],
            Unsigned {
                body: provider.sample_body(&sample),
                event_id: &sample.event_id,
                timestamp: sample.timestamp,
                settings: &source.settings,
            },
        );
        let headers: Vec<(&str, &str)> = signed
            .headers
            .iter()
            .map(|(n, v)| (*n, v.as_str()))
            .collect();
        let delivery = Delivery {
            headers: &HeaderPairs(&headers),
            body: &signed.body,
            received_at: now,
        };
        let policy = VerifyPolicy {
            tolerance_secs: source.tolerance_secs,
            settings: &source.settings,
        };
        let kind = provider.kind();
        let verified = provider
            .verify(&delivery, &source.keys, &policy, now)
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        let json: serde_json::Value = serde_json::from_slice(&signed.body).unwrap();
        let events = provider
            .normalise(&verified, &delivery, &json, &source.mapping)
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert!(
            matches!(&events[0].movement, Movement::Post(p) if p.amount.minor() == 1500),
            "{kind}: {:?}",
            events[0].movement
        );
    }

    /// Every kind's template is a valid config once its secret is set
    /// (PayPal's needs its certificate file and webhook id first).
    #[test]
    fn every_template_runs_as_written_with_its_secret() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().display().to_string();
        for kind in known_kinds().filter(|k| *k != "paypal") {
            let text = template(kind, "src-1", "https://hooks.example.com").unwrap();
            // A secret of the form the kind takes.
            let provider = provider_for(kind).unwrap();
            let secret = [
                "whsec_YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4",
                "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056",
            ]
            .into_iter()
            .find(|s| provider.keys_from_secret(&Secret::new(*s)).is_ok())
            .unwrap_or_else(|| panic!("{kind}: no sample secret fits"));
            let env = |name: &str| match name {
                "SRC_1_WEBHOOK_SECRET" => Some(secret.to_owned()),
                "HOOKLEDGER_DATA_DIR" => Some(data_dir.clone()),
                _ => None,
            };
            let config = crate::config::from_toml(&text, &env)
                .unwrap_or_else(|e| panic!("{kind}: {e}\n{text}"));
            assert_eq!(config.sources[0].provider.kind(), kind);
            assert!(config.warnings.is_empty(), "{kind}: {:?}", config.warnings);
            assert_sample_credits(&config.sources[0]);
        }
        let paypal = template("paypal", "paypal", "https://h").unwrap();
        assert!(paypal.contains("certificates = [\"paypal-cert.pem\"]"));
        assert!(
            template("nope", "x", "https://h")
                .unwrap_err()
                .contains("known: ")
        );
    }
}
