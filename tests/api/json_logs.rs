//! `HOOKLEDGER_LOG_FORMAT=json`: the real binary writes one JSON object per
//! line, with one line per delivery naming its source, event id, outcome
//! and duration, and never the body or a secret.

use serde_json::Value;

use crate::helpers::Backend;
use crate::process::demo_on;
use crate::shutdown::{delivery, post};

async fn every_line_is_json_and_each_delivery_has_one(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let (server, _database) =
        demo_on(&backend, dir.path(), &[("HOOKLEDGER_LOG_FORMAT", "json")]).await;
    let signed = delivery(dir.path(), "evt_json_1");
    for _ in 0..2 {
        let (status, _) = post(&server.base(), &signed).await.unwrap();
        assert_eq!(status, 200);
    }
    let secret = std::fs::read_to_string(dir.path().join("data/demo_secret")).unwrap();
    let body = String::from_utf8(signed.body.clone()).unwrap();

    let log = server.log();
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let deliveries: Vec<&Value> = lines
        .iter()
        .filter(|line| line["message"] == "webhook received")
        .collect();
    assert_eq!(deliveries.len(), 2, "{log}");
    let outcomes: Vec<(&Value, &Value, &Value)> = deliveries
        .iter()
        .map(|line| (&line["source"], &line["event_id"], &line["outcome"]))
        .collect();
    assert_eq!(
        outcomes,
        [
            (&"demo".into(), &"evt_json_1".into(), &"applied".into()),
            (&"demo".into(), &"evt_json_1".into(), &"duplicate".into()),
        ]
    );
    for line in &deliveries {
        assert_eq!(line["level"], "INFO");
        assert!(line["duration_ms"].as_f64().unwrap() > 0.0, "{line}");
        assert!(line["timestamp"].is_string(), "{line}");
    }
    assert!(!log.contains(secret.trim()), "a secret was logged");
    assert!(!log.contains(&body), "a body was logged");
}

both_backends!(every_line_is_json_and_each_delivery_has_one);
