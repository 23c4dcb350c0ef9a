//! A property test of "verified means stored": authentic deliveries with
//! arbitrary JSON values in every mapped field (and, now and then, arbitrary
//! bytes) are sent to an SQLite and a PostgreSQL instance alike. Neither may
//! answer anything but 200, every event must be stored, and both must decide
//! the same for each.
//!
//! Seeded: a failure names its seed; `HOOKLEDGER_PROPERTY_SEED=<seed>`
//! replays it, `HOOKLEDGER_PROPERTY_CASES=<n>` runs more cases (default 150).

use hookledger::cli::{SignedRequest, sign_body};
use hookledger::rng::SplitMix64 as Rng;
use hookledger::secret::Secret;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Backend, DEMO_SECRET, STRIPE_SECRET, TestApp, now};

/// A hostile or merely surprising JSON value.
fn arbitrary(rng: &mut Rng, depth: u32) -> Value {
    let fixed = [
        Value::Null,
        json!(true),
        json!(0),
        json!(-1),
        json!(i64::MAX),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(1e308),
        json!(-0.5),
        json!(""),
        json!("\u{0}"),
        json!("pi_\u{0}1"),
        json!("x".repeat(300)),
        json!("é".repeat(200)),
        json!("\u{7f}\u{1b}[31m"),
        json!("\u{202e}acct"),
        json!(" acct_1 "),
        json!("acct_1"),
        json!("USD"),
        json!("usd\u{0}"),
        json!("JPY"),
        json!("1000"),
        json!("10.005"),
        json!("-5"),
        json!("2024-04-12T10:18:49.621022Z"),
        json!("0000-01-01T00:00:00+23:59"),
        json!("9999-12-31T23:59:59-23:59"),
        json!(253_402_300_800_i64),
        json!(-62_135_596_801_i64),
        json!(1_780_315_200),
        json!(4_611_686_018_427_387_905_i64),
    ];
    match rng.below(if depth > 2 { 2 } else { 6 }) {
        0 | 1 => rng.pick(&fixed).clone(),
        2 => {
            let len = rng.below(40);
            Value::String(
                (0..len)
                    .map(|_| char::from_u32(rng.next_u64() as u32 % 0x3_0000).unwrap_or('\u{fffd}'))
                    .collect(),
            )
        }
        3 => json!([arbitrary(rng, depth + 1)]),
        4 => json!({ "id": arbitrary(rng, depth + 1) }),
        _ => json!(rng.next_u64() as i64),
    }
}

struct Template {
    source: &'static str,
    body: Value,
    fields: &'static [&'static str],
}

fn templates() -> Vec<Template> {
    let payment: Value = serde_json::from_str(include_str!(
        "../fixtures/stripe/payment_intent.succeeded.json"
    ))
    .unwrap();
    let refund: Value =
        serde_json::from_str(include_str!("../fixtures/stripe/refund.created.json")).unwrap();
    vec![
        Template {
            source: "stripe",
            body: payment,
            fields: &[
                "id",
                "type",
                "created",
                "data",
                "data.object",
                "data.object.id",
                "data.object.amount_received",
                "data.object.currency",
                "data.object.metadata",
                "data.object.metadata.account_id",
            ],
        },
        Template {
            source: "stripe",
            body: refund,
            fields: &[
                "id",
                "created",
                "data.object.id",
                "data.object.amount",
                "data.object.currency",
                "data.object.payment_intent",
                "data.object.status",
            ],
        },
        Template {
            source: "demo",
            body: json!({
                "type": "balance.credit",
                "timestamp": "2024-04-12T10:18:49Z",
                "data": {"account_id": "acct_1", "amount_minor": 500, "currency": "USD", "sequence": 3}
            }),
            fields: &[
                "type",
                "timestamp",
                "data",
                "data.account_id",
                "data.amount_minor",
                "data.currency",
                "data.sequence",
            ],
        },
    ]
}

fn set(body: &mut Value, path: &str, value: Value) {
    let segments: Vec<&str> = path.split('.').collect();
    let mut at = body;
    for segment in &segments[..segments.len() - 1] {
        if !at.is_object() {
            return;
        }
        at = &mut at[*segment];
    }
    if at.is_object() {
        at[segments[segments.len() - 1]] = value;
    }
}

/// One case: a template with one to three fields replaced, now and then a
/// body byte overwritten, signed as its source's sender signs.
fn case(rng: &mut Rng, templates: &[Template], n: usize) -> (&'static str, SignedRequest) {
    let template = rng.pick(templates);
    let mut body = template.body.clone();
    for _ in 0..=rng.below(3) {
        let field = *rng.pick(template.fields);
        set(&mut body, field, arbitrary(rng, 0));
    }
    let mut bytes = serde_json::to_vec(&body).unwrap();
    if rng.below(10) == 0 {
        let at = rng.index(bytes.len());
        bytes[at] = rng.next_u64() as u8;
    }
    let (kind, secret) = match template.source {
        "stripe" => ("stripe", STRIPE_SECRET),
        _ => ("standard-webhooks", DEMO_SECRET),
    };
    let id = format!("msg_{n}");
    let signed = sign_body(kind, &Secret::new(secret), bytes, &id, now().timestamp()).unwrap();
    (template.source, signed)
}

/// What an instance decided for one delivery, as compared across backends.
async fn decide(app: &TestApp, source: &str, request: &SignedRequest, seed: u64) -> Value {
    let response = app.post_signed(source, request).await;
    let status = response.status();
    let text = response.text().await.unwrap();
    assert_eq!(
        status,
        StatusCode::OK,
        "seed {seed}: a verified delivery must be stored and answered 200: {text}\nbody: {:?}",
        String::from_utf8_lossy(&request.body)
    );
    let answer: Value = serde_json::from_str(&text).unwrap();
    let mut decided = Vec::new();
    for outcome in answer["events"].as_array().cloned().unwrap_or(vec![answer]) {
        let id = outcome["event_id"].as_str().unwrap().to_owned();
        let event = app.event(source, &id).await;
        decided.push(json!({
            "answer": outcome["status"],
            "duplicate": outcome["duplicate"],
            "status": event["status"],
            "type": event["event_type"],
            "object": event["object_id"],
            "reason": event["reason"],
            "amount": event["amount_minor"],
        }));
    }
    Value::Array(decided)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbitrary_values_in_mapped_fields_are_stored_alike_on_both_backends() {
    let seed = std::env::var("HOOKLEDGER_PROPERTY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            // A new seed each run explores more; the seed is printed.
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    let cases: usize = std::env::var("HOOKLEDGER_PROPERTY_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(150);
    eprintln!("property seed {seed} ({cases} cases): HOOKLEDGER_PROPERTY_SEED={seed} replays it");
    let sqlite = TestApp::spawn(Backend::Sqlite).await;
    let postgres = match Backend::postgres_or_skip(module_path!()) {
        Some(backend) => Some(TestApp::spawn(backend).await),
        None => None,
    };
    let templates = templates();
    let mut rng = Rng::new(seed);
    for n in 0..cases {
        let (source, request) = case(&mut rng, &templates, n);
        let on_sqlite = decide(&sqlite, source, &request, seed).await;
        if let Some(postgres) = &postgres {
            let on_postgres = decide(postgres, source, &request, seed).await;
            assert_eq!(
                on_sqlite,
                on_postgres,
                "seed {seed}, case {n}: the backends differ\nbody: {:?}",
                String::from_utf8_lossy(&request.body)
            );
        }
    }
    sqlite.assert_invariants().await;
    if let Some(postgres) = &postgres {
        postgres.assert_invariants().await;
    }
}
