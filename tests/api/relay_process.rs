//! `hookledger relay` as its own process beside a `serve --no-relay`: it
//! delivers what the server wrote, and its `--metrics-listen` shows its own
//! counters and the shared outbox's gauges, behind `metrics.token`.

use std::time::Duration;

use reqwest::StatusCode;

use crate::helpers::*;
use crate::metrics::{scrape_url, value};
use crate::outbox::http_destination;
use crate::process::Server;
use crate::receiver::{Answer, Receiver};
use crate::samples::credit;

const TOKEN: &str = "relay-metrics-token-0123456789";

crate::both_backends!(a_relay_process_delivers_and_counts_on_its_own_listener);

async fn a_relay_process_delivers_and_counts_on_its_own_listener(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Status(204)).await;
    let destination = http_destination("billing", &receiver.url(), "");
    let top_level = format!("[metrics]\ntoken = \"{TOKEN}\"");
    let options = Options {
        top_level: &top_level,
        extra_sources: &destination,
        no_relay: true,
        ..Options::default()
    };
    let app = TestApp::spawn_with(backend, options).await;
    for (n, amount) in [(1, 1500), (2, 700), (3, 250)] {
        app.send_ok(&credit(&format!("evt_{n}"), "cus_1", amount))
            .await;
    }
    // The server relays nothing itself.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(receiver.received().is_empty(), "serve --no-relay sent");

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookledger.toml");
    let options = Options {
        top_level: &top_level,
        extra_sources: &destination,
        ..Options::default()
    };
    crate::helpers::write_config(&config, base_config(&app.database_url, &options)).unwrap();
    let config = config.display().to_string();
    let relay = Server::start_with(
        dir.path(),
        &[
            "--config",
            &config,
            "relay",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
        &[],
        "hookledger relay: metrics on",
    );
    let url = relay
        .banner
        .last()
        .and_then(|line| line.split_whitespace().last())
        .expect("the metrics URL")
        .to_owned();

    let started = std::time::Instant::now();
    while receiver.accepted().len() < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the relay delivered {} of 3: {}",
            receiver.accepted().len(),
            relay.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let client = hookledger::tls::client();
    for presented in [None, Some("relay-metrics-token-wrong-000")] {
        let mut request = client.get(&url);
        if let Some(token) = presented {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{presented:?}");
    }
    // The relay counts just after it records the outcomes.
    let delivered = r#"hookledger_outbox_delivered_total{destination="billing"}"#;
    let mut samples = scrape_url(&client, &url, Some(TOKEN)).await;
    while samples.get(delivered) != Some(&3.0) && started.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        samples = scrape_url(&client, &url, Some(TOKEN)).await;
    }
    assert_eq!(value(&samples, delivered), 3.0);
    let sends = r#"hookledger_outbox_delivery_duration_seconds_count{destination="billing"}"#;
    assert_eq!(value(&samples, sends), 3.0);
    let pending = r#"hookledger_outbox_pending{destination="billing"}"#;
    assert_eq!(value(&samples, pending), 0.0);
    // The server's own counters saw none of it.
    let served = scrape_url(&app.client, &app.url("/metrics"), Some(TOKEN)).await;
    assert_eq!(served.get(delivered), None, "{served:#?}");

    for (path, status) in [
        ("/readyz", StatusCode::OK),
        ("/healthz", StatusCode::OK),
        // Only the probes and the counters: no admin, no webhooks.
        ("/admin", StatusCode::NOT_FOUND),
        ("/webhooks/demo", StatusCode::NOT_FOUND),
    ] {
        let response = client
            .get(url.replace("/metrics", path))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{path}");
    }
    // SIGTERM: the listener and the relays stop, and the process exits 0.
    let mut relay = relay;
    relay.signal("TERM");
    let status = relay.exit_status(Duration::from_secs(15));
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}: {}",
        relay.log()
    );
}
