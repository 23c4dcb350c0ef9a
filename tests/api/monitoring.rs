//! The alert rules (`deploy/prometheus/alerts.yml`, their promtool tests)
//! and the Grafana dashboard (`deploy/grafana/hookledger.json`) name only
//! metrics and labels the server exports: a renamed metric or a mistyped
//! label fails here, where Prometheus would only show an empty panel or an
//! alert that never fires.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::*;
use crate::outbox::http_destination;
use crate::receiver::{Answer, Receiver};

/// What `/metrics` exports: each series name with the label names seen on
/// it (families with no sample yet are named by their `# TYPE` line).
#[derive(Debug, Default)]
struct Exported(HashMap<String, BTreeSet<String>>);

/// Labels Prometheus itself adds (`job`, `instance`) or a histogram has.
const IMPLICIT_LABELS: &[&str] = &["job", "instance", "le"];

impl Exported {
    fn parse(text: &str) -> Exported {
        let mut exported = Exported::default();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let mut parts = rest.split(' ');
                let (name, kind) = (parts.next().unwrap(), parts.next().unwrap());
                let suffixes: &[&str] = match kind {
                    "counter" => &["", "_total"],
                    "histogram" => &["_bucket", "_sum", "_count"],
                    _ => &[""],
                };
                for suffix in suffixes {
                    exported.0.entry(format!("{name}{suffix}")).or_default();
                }
            } else if !line.starts_with('#') && !line.is_empty() {
                let series = line.rsplit_once(' ').unwrap().0;
                let (name, labels) = series.split_once('{').unwrap_or((series, ""));
                let names = exported.0.entry(name.to_owned()).or_default();
                for pair in labels.trim_end_matches('}').split(',') {
                    if let Some((label, _)) = pair.split_once('=') {
                        names.insert(label.to_owned());
                    }
                }
            }
        }
        exported
    }

    fn every_label(&self) -> BTreeSet<&str> {
        let mut all: BTreeSet<&str> = self.0.values().flatten().map(String::as_str).collect();
        all.extend(IMPLICIT_LABELS);
        all
    }

    /// What `text` names that is not exported: `hookledger_*` names, the
    /// label names matched on each, the labels aggregated by, and the
    /// labels a template reads (`{{ $labels.x }}`, a legend's `{{x}}`).
    fn problems(&self, text: &str) -> Vec<String> {
        let mut problems = Vec::new();
        let every_label = self.every_label();
        let mut rest = text;
        while let Some(at) = rest.find("hookledger_") {
            let tail = &rest[at..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(tail.len());
            let name = &tail[..end];
            match self.0.get(name) {
                None => problems.push(format!("{name} is not exported")),
                Some(labels) => {
                    if let Some(matchers) = tail[end..].strip_prefix('{') {
                        let matchers = &matchers[..matchers.find('}').unwrap()];
                        for matcher in matchers.split(',') {
                            let label = matcher.split(['=', '!', '~']).next().unwrap().trim();
                            if !labels.contains(label) && !IMPLICIT_LABELS.contains(&label) {
                                problems.push(format!("{name} has no label {label}"));
                            }
                        }
                    }
                }
            }
            rest = &tail[end..];
        }
        for clause in text.split("by (").skip(1) {
            for label in clause[..clause.find(')').unwrap()].split(',') {
                let label = label.trim();
                if !every_label.contains(label) {
                    problems.push(format!("no metric has the label {label} (by)"));
                }
            }
        }
        for template in text.split("{{").skip(1) {
            let inner = template[..template.find("}}").unwrap()].trim();
            let label = inner.strip_prefix("$labels.").unwrap_or(inner);
            if inner.starts_with('$') && !inner.starts_with("$labels.") {
                continue; // $value and the like
            }
            if !every_label.contains(label) {
                problems.push(format!("no metric has the label {label} (template)"));
            }
        }
        problems
    }
}

fn repo_file(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A server with every kind of labelled series in its scrape: a delivery,
/// a forged one, a malformed request, an outbox destination and a
/// reconciling source whose sweep fails (a family with no sample is not
/// in the exposition at all).
async fn exported(backend: Backend) -> Exported {
    let receiver = Receiver::start(&[], Answer::Status(204)).await;
    let sources = format!(
        "{}\n[[sources]]\nname = \"stripe-swept\"\nkind = \"stripe\"\n\
         secrets = [\"whsec_monitoring_test_secret\"]\n\
         [sources.reconcile]\napi_key = \"sk_test_monitoring\"\n\
         api_base = \"http://127.0.0.1:9\"\ninterval_secs = 1\n",
        http_destination("ledger", &receiver.url(), "")
    );
    let app = TestApp::spawn_with(
        backend,
        Options {
            extra_sources: &sources,
            ..Options::default()
        },
    )
    .await;
    app.send_ok(&credit("evt_1", "cus_1", 1500)).await;
    let forged = app
        .deliver(
            "demo",
            "standard-webhooks",
            ROTATED_OUT_SECRET,
            &credit("evt_x", "cus_1", 1),
        )
        .await;
    assert_eq!(forged.status(), reqwest::StatusCode::UNAUTHORIZED);
    let address = app.url("").trim_start_matches("http://").to_owned();
    let mut raw = tokio::net::TcpStream::connect(address.trim_end_matches('/'))
        .await
        .unwrap();
    raw.write_all(b"NOT HTTP AT ALL\r\n\r\n").await.unwrap();
    let mut answer = Vec::new();
    let _ = raw.read_to_end(&mut answer).await;
    // The sweep's failures (nothing listens on port 9) reach the counter
    // after its tries, a few seconds; the credit's message is delivered.
    for _ in 0..120 {
        let text = app
            .client
            .get(app.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if text.contains("hookledger_reconcile_errors_total{")
            && text.contains("hookledger_outbox_delivery_lag_seconds_bucket{")
        {
            return Exported::parse(&text);
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    panic!("no reconcile error or delivered message within 30 s");
}

/// Series only a PostgreSQL database has (replication): exported there,
/// absent on SQLite, whose half of the test takes them as checked.
const POSTGRES_ONLY: &[&str] = &[
    "hookledger_database_synchronous_commit",
    "hookledger_database_synchronous_standbys",
];

async fn the_rules_and_the_dashboard_name_only_what_is_exported(backend: Backend) {
    let sqlite = matches!(backend, Backend::Sqlite);
    let mut exported = exported(backend).await;
    for name in POSTGRES_ONLY {
        assert_eq!(exported.0.contains_key(*name), !sqlite, "{name}");
        exported.0.entry(name.to_string()).or_default();
    }
    // The scrape really has the labelled families the files use.
    for (name, label) in [
        ("hookledger_deliveries_total", "outcome"),
        ("hookledger_verification_failures_total", "reason"),
        ("hookledger_connections_refused_total", "reason"),
        ("hookledger_outbox_pending", "destination"),
        ("hookledger_reconcile_window_left_seconds", "source"),
    ] {
        assert!(exported.0[name].contains(label), "{name}: {exported:?}");
    }
    let rules = repo_file("deploy/prometheus/alerts.yml");
    let tests = repo_file("deploy/prometheus/alerts_test.yml");
    let dashboard: serde_json::Value =
        serde_json::from_str(&repo_file("deploy/grafana/hookledger.json")).unwrap();
    let mut panels = String::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            panels.push_str(target["expr"].as_str().unwrap());
            panels.push('\n');
            panels.push_str(target["legendFormat"].as_str().unwrap_or_default());
            panels.push('\n');
        }
    }
    for (file, text, at_least) in [
        ("alerts.yml", &rules, 8),
        ("alerts_test.yml", &tests, 8),
        ("hookledger.json", &panels, 15),
    ] {
        let named = text.matches("hookledger_").count();
        assert!(named >= at_least, "{file} names {named} metrics");
        assert_eq!(exported.problems(text), Vec::<String>::new(), "{file}");
    }
    // And the check finds what it looks for.
    assert_eq!(
        exported.problems("rate(hookledger_deliveries_totl[5m]) by (sorce) {{ $labels.sorce }}"),
        [
            "hookledger_deliveries_totl is not exported",
            "no metric has the label sorce (by)",
            "no metric has the label sorce (template)",
        ]
    );
    assert_eq!(
        exported.problems(r#"hookledger_held_events{state="stale"}"#),
        ["hookledger_held_events has no label state"]
    );
}

both_backends!(the_rules_and_the_dashboard_name_only_what_is_exported);

/// `promtool check rules` and `promtool test rules` (Debian's `prometheus`
/// package, which `.ci/run` installs): the rules parse, and each alert
/// fires in its firing case and stays quiet in its quiet one.
#[test]
fn the_alert_rules_pass_promtool() {
    let promtool = std::env::var("HOOKLEDGER_TEST_PROMTOOL").unwrap_or_else(|_| "promtool".into());
    let run = |args: &[&str]| {
        std::process::Command::new(&promtool)
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
    };
    let checked = match run(&["check", "rules", "deploy/prometheus/alerts.yml"]) {
        Ok(output) => output,
        Err(_) if std::env::var_os("CI").is_some() => {
            panic!("CI is set but {promtool} does not run: the alert rules cannot be tested")
        }
        Err(_) => {
            eprintln!("SKIPPED the_alert_rules_pass_promtool: {promtool} does not run");
            return;
        }
    };
    let said = |output: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    };
    assert!(checked.status.success(), "{}", said(&checked));
    // Every alert has its cases (promtool matches the firing set exactly,
    // so a case's quiet series are checked with its firing ones).
    let rules = repo_file("deploy/prometheus/alerts.yml");
    let cases = repo_file("deploy/prometheus/alerts_test.yml");
    let alerts: Vec<&str> = rules
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- alert: "))
        .collect();
    assert_eq!(alerts.len(), 14, "{alerts:?}");
    for alert in alerts {
        assert!(
            cases.matches(&format!("alertname: {alert}\n")).count() >= 2,
            "{alert} has no quiet and firing evaluations in alerts_test.yml"
        );
    }
    let tested = run(&["test", "rules", "deploy/prometheus/alerts_test.yml"]).unwrap();
    assert!(tested.status.success(), "{}", said(&tested));
}
