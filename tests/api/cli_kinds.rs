//! `hookledger send --kind K` for every kind hookledger can sign, against
//! the real binary with one source of each kind: each sample is signed as
//! that provider signs and credits its account once.

use std::path::Path;

use crate::helpers::{ADMIN_TOKEN, Backend};
use crate::process::{Server, hookledger};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/paypal");
const SQUARE_URL: &str = "https://hooks.example.com/webhooks/square";

/// (kind, secret as `send` takes it) for every kind `send` can sign.
const KINDS: [(&str, &str); 13] = [
    ("stripe", "whsec_cli_stripe"),
    (
        "standard-webhooks",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    ),
    ("polar", "whsec_cli_polar_0123456789"),
    ("paddle", "pdl_ntfset_01cli_secret"),
    ("shopify", "shpss_cli_secret"),
    ("square", "cli-square-signature-key"),
    (
        "adyen",
        "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056",
    ),
    ("razorpay", "cli-razorpay-secret"),
    ("lemonsqueezy", "cli-lemon-secret"),
    ("paystack", "sk_test_cli"),
    ("checkout", "cli-checkout-key"),
    ("coinbase", "cli-coinbase-secret"),
    ("mollie", "cli-mollie-secret"),
];

fn config(database_url: &str) -> String {
    let mut text = format!(
        "listen = \"127.0.0.1:0\"\ndatabase_url = \"{database_url}\"\n\
         [admin]\ntoken = \"{ADMIN_TOKEN}\"\n"
    );
    for (kind, secret) in KINDS {
        let extra = if kind == "square" {
            format!("notification_url = \"{SQUARE_URL}\"\n")
        } else {
            String::new()
        };
        text.push_str(&format!(
            "[[sources]]\nname = \"{kind}\"\nkind = \"{kind}\"\nsecrets = [\"{secret}\"]\n{extra}"
        ));
    }
    text.push_str(&format!(
        "[[sources]]\nname = \"paypal\"\nkind = \"paypal\"\nwebhook_id = \"WH-CLI\"\n\
         certificates = [\"{FIXTURES}/throwaway-cert.pem\"]\n"
    ));
    text
}

fn send(dir: &Path, server: &Server, kind: &str, secret: &[&str]) -> String {
    let output = hookledger(dir)
        .args(["send", "--kind", kind])
        .args(["--url", &format!("{}/webhooks/{kind}", server.base())])
        .args(secret)
        .args(["--account", &format!("acct_{kind}"), "--amount", "1500"])
        .args(["--currency", "USD", "--notification-url", SQUARE_URL])
        .output()
        .expect("send runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "send --kind {kind} failed: {stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

async fn every_kind_signs_with_send_and_credits_once(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let (database_url, _postgres) =
        crate::postgres::database_for(&backend, &dir.path().join("hookledger.db")).await;
    let file = dir.path().join("hookledger.toml");
    crate::helpers::write_config(&file, config(&database_url)).unwrap();
    let server = Server::start(
        dir.path(),
        &[("HOOKLEDGER_CONFIG", file.to_str().unwrap())],
        "admin page",
    );
    let key = format!("{FIXTURES}/throwaway-key.pem");
    let mut runs: Vec<(&str, Vec<&str>)> = KINDS
        .iter()
        .map(|(kind, secret)| (*kind, vec!["--secret", *secret]))
        .collect();
    runs.push((
        "paypal",
        vec!["--secret-file", key.as_str(), "--webhook-id", "WH-CLI"],
    ));
    for (kind, secret) in runs {
        let answer = send(dir.path(), &server, kind, &secret);
        assert!(answer.contains(r#""status":"applied""#), "{kind}: {answer}");
        let balance = server
            .admin(ADMIN_TOKEN, &format!("/admin/api/accounts/acct_{kind}"))
            .await;
        assert_eq!(balance["balances"][0]["balance_minor"], 1500, "{kind}");
    }
    assert_eq!(
        server.admin(ADMIN_TOKEN, "/admin/api/check").await["ok"],
        true
    );
}

both_backends!(every_kind_signs_with_send_and_credits_once);
