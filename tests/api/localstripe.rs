//! localstripe (PyPI `localstripe==1.15.10`, a stateful Stripe fake written
//! by a third party) as a child process on a port of its own, driven with
//! Stripe's own Python SDK (`tests/reconcile/stripe_pay.py`). Both come from
//! the venv `.ci/run` makes (`tests/reconcile/requirements.txt`), named by
//! `HOOKLEDGER_TEST_LOCALSTRIPE_PYTHON`: without it a test skips, and under
//! CI fails, as the PostgreSQL tests do.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

pub struct LocalStripe {
    child: Child,
    python: String,
    pub base: String,
}

impl Drop for LocalStripe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl LocalStripe {
    /// A fresh localstripe, or `None` (said) where the venv is not set up.
    pub async fn start(test: &str) -> Option<LocalStripe> {
        let python = match std::env::var("HOOKLEDGER_TEST_LOCALSTRIPE_PYTHON") {
            Ok(python) if !python.is_empty() => python,
            _ if std::env::var_os("CI").is_some() => {
                panic!("CI is set but HOOKLEDGER_TEST_LOCALSTRIPE_PYTHON is not: {test} cannot run")
            }
            _ => {
                eprintln!("SKIPPED {test}: HOOKLEDGER_TEST_LOCALSTRIPE_PYTHON is not set");
                return None;
            }
        };
        let port = free_port();
        // Its own working directory: localstripe keeps a copy of its store
        // in /tmp, which --from-scratch never reads.
        let child = Command::new(&python)
            .args([
                "-m",
                "localstripe",
                "--port",
                &port.to_string(),
                "--from-scratch",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("localstripe starts");
        let stripe = LocalStripe {
            child,
            python,
            base: format!("http://127.0.0.1:{port}"),
        };
        stripe.until_listening().await;
        Some(stripe)
    }

    async fn until_listening(&self) {
        let client = hookledger::tls::client();
        for _ in 0..200 {
            let answer = client
                .get(format!("{}/v1/events", self.base))
                .bearer_auth("sk_test_hookledger")
                .send()
                .await;
            if answer.is_ok_and(|a| a.status().is_success()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("localstripe did not answer at {}", self.base);
    }

    /// Where localstripe sends its signed webhooks (every event type).
    pub async fn send_webhooks_to(&self, url: &str, secret: &str) {
        let answer = hookledger::tls::client()
            .post(format!("{}/_config/webhooks/hookledger", self.base))
            .form(&[("url", url), ("secret", secret)])
            .send()
            .await
            .unwrap();
        assert!(answer.status().is_success(), "{answer:?}");
    }

    /// `count` PaymentIntents of `amount` for `account`, made and
    /// confirmed with Stripe's SDK; their ids.
    pub fn pay(&self, count: usize, account: &str, amount: i64) -> Vec<String> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reconcile/stripe_pay.py");
        let output = Command::new(&self.python)
            .arg(script)
            .args([&self.base, &count.to_string(), account, &amount.to_string()])
            .output()
            .expect("the SDK script runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Every event localstripe lists, as its API answers them.
    pub async fn events(&self) -> Vec<Value> {
        let answer: Value = hookledger::tls::client()
            .get(format!("{}/v1/events?limit=1000", self.base))
            .bearer_auth("sk_test_hookledger")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        answer["data"].as_array().cloned().unwrap_or_default()
    }
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
