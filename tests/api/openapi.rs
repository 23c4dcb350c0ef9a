//! The HTTP contract (`schema/openapi.json`, OpenAPI 3.1 from the
//! handlers' types): the committed file is the generated one and the one
//! the server serves, every route the server answers is in it (and
//! nothing else; `book::` renders it into the book), and schemathesis, a property-based tester nobody here
//! wrote, finds no answer that breaks it (`HOOKLEDGER_TEST_SCHEMATHESIS`,
//! from the venv `.ci/run` creates).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::*;

fn committed() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/openapi.json");
    std::fs::read_to_string(path).expect("schema/openapi.json is committed")
}

#[test]
fn the_committed_contract_is_the_generated_one() {
    assert!(
        committed() == hookledger::admin::openapi::text(),
        "schema/openapi.json is not what the handlers describe: \
         cargo run -- openapi > schema/openapi.json"
    );
}

/// The paths of the contract, each with its methods.
fn contract_paths(document: &Value) -> BTreeMap<String, Vec<String>> {
    document["paths"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(path, item)| {
            let mut methods: Vec<String> = item
                .as_object()
                .unwrap()
                .keys()
                .map(|m| m.to_uppercase())
                .collect();
            methods.sort();
            (path.clone(), methods)
        })
        .collect()
}

/// Routes outside the admin API that clients call (the admin pages are
/// HTML for a browser, not part of the contract).
const PUBLIC: &[&str] = &["/", "/healthz", "/readyz", "/metrics", "/webhooks/{source}"];

async fn the_served_contract_is_the_committed_one_and_names_every_route(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let served = app.admin_get("/admin/api/openapi.json").await;
    assert_eq!(served.status(), 200);
    assert_eq!(served.text().await.unwrap(), committed());
    let anonymous = app
        .client
        .get(app.url("/admin/api/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);

    let document: Value = serde_json::from_str(&committed()).unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    let documented = contract_paths(&document);
    // What the server registered (HEAD comes with every GET).
    let answered: BTreeMap<String, Vec<String>> = hookledger::http::routes::registered()
        .into_iter()
        .filter(|(path, _)| path.starts_with("/admin/api/") || PUBLIC.contains(&path.as_str()))
        .map(|(path, methods)| {
            let mut methods: Vec<String> = methods.into_iter().filter(|m| m != "HEAD").collect();
            methods.sort();
            (path, methods)
        })
        .collect();
    assert_eq!(documented, answered);
    assert!(documented.len() >= 26, "{documented:?}");
    app.assert_invariants().await;
}

/// Where schemathesis (`st`) is; none (skipped, loudly) outside CI.
fn schemathesis(test: &str) -> Option<String> {
    named_by_env("HOOKLEDGER_TEST_SCHEMATHESIS", test)
}

/// Something behind every route: applied events, held ones (late debits,
/// an unreadable body, an account holding many), a gap, a verification
/// failure; so the fuzzer's links lead to real events, gaps and guards.
async fn seed(app: &TestApp) {
    for seq in 1..=3 {
        app.send_ok(&credit_seq(&format!("evt_c{seq}"), "acct_1", 1000, seq))
            .await;
    }
    app.send_ok(&debit_seq("evt_late", "acct_1", 300, 2)).await;
    app.send_ok(&credit_seq("evt_h0", "acct_held", 5000, 100))
        .await;
    for seq in 1..=6 {
        app.send_ok(&debit_seq(&format!("evt_h{seq}"), "acct_held", 10, seq))
            .await;
    }
    let unreadable = app
        .deliver_body("demo", "evt_unreadable", b"not json")
        .await;
    assert_eq!(unreadable.status(), 200);
    app.send_to("ledger", &credit_seq("evt_g1", "acct_gap", 700, 1))
        .await;
    app.send_to("ledger", &credit_seq("evt_g3", "acct_gap", 700, 3))
        .await;
    let forged = app
        .deliver(
            "demo",
            "standard-webhooks",
            ROTATED_OUT_SECRET,
            &credit("evt_forged", "acct_1", 1),
        )
        .await;
    assert_eq!(forged.status(), 401);
    let held = app.admin_get("/admin/api/held_accounts").await;
    let held: Value = held.json().await.unwrap();
    assert_eq!(held["accounts"][0]["account_id"], "acct_held", "{held}");
    let gaps: Value = app.admin_get("/admin/api/gaps").await.json().await.unwrap();
    assert_eq!(gaps["gaps"][0]["account_id"], "acct_gap", "{gaps}");
}

/// How many cases per operation and which seed: a short, fixed run in CI;
/// `HOOKLEDGER_SCHEMATHESIS_EXAMPLES` and `HOOKLEDGER_SCHEMATHESIS_SEED`
/// for a longer or another one.
fn budget() -> (String, String) {
    let examples =
        std::env::var("HOOKLEDGER_SCHEMATHESIS_EXAMPLES").unwrap_or_else(|_| "25".into());
    let seed = std::env::var("HOOKLEDGER_SCHEMATHESIS_SEED").unwrap_or_else(|_| "1".into());
    (examples, seed)
}

/// Every check schemathesis has, in every phase (examples, coverage,
/// fuzzing, stateful links) and both modes (valid and invalid input),
/// against a live server with data: no 5xx, every answer as the contract
/// says (status, content type, headers, body), invalid input refused, valid
/// input taken, the token required, no answer slower than 1 s. The ledger
/// holds afterwards, whatever actions the fuzzer took.
async fn schemathesis_finds_nothing_against_the_contract(backend: Backend) {
    let test = "schemathesis_finds_nothing_against_the_contract";
    let Some(st) = schemathesis(test) else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    seed(&app).await;
    let (examples, seed) = budget();
    let report = tempfile::tempdir().unwrap();
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tools/schemathesis.toml");
    let args: Vec<String> = [
        "--config-file",
        &config.display().to_string(),
        "run",
        &app.url("/admin/api/openapi.json"),
        "--header",
        &format!("Authorization: Bearer {ADMIN_TOKEN}"),
        "--checks",
        "all",
        "--mode",
        "all",
        "--phases",
        "examples,coverage,fuzzing,stateful",
        "--max-response-time",
        "1",
        "--max-examples",
        &examples,
        "--seed",
        &seed,
        "--workers",
        "1",
        "--no-color",
        "--report-dir",
        &report.path().display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Its cache (`.schemathesis/`) goes with the report, not into the tree.
    let workdir = report.path().to_owned();
    let ran = tokio::task::spawn_blocking(move || {
        std::process::Command::new(&st)
            .args(&args)
            .current_dir(workdir)
            .env("SCHEMATHESIS_HOOKS", "")
            .output()
    });
    let output = tokio::time::timeout(Duration::from_secs(600), ran)
        .await
        .expect("schemathesis finished within 10 minutes")
        .unwrap()
        .expect("schemathesis runs");
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "schemathesis found what breaks the contract:\n{said}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // It really tested every operation it selected, and selected all.
    let count = |label: &str| -> String {
        let line = said.lines().find(|l| l.trim_start().starts_with(label));
        let line = line.unwrap_or_else(|| panic!("no {label} in:\n{said}"));
        line.trim_start()[label.len()..].trim().to_owned()
    };
    let tested: usize = count("Tested:").parse().unwrap();
    assert_eq!(count("Selected:"), format!("{tested}/{tested}"), "{said}");
    assert!(tested >= 25, "{said}");
    assert!(!said.contains("❌"), "{said}");
    let check: Value = app
        .admin_get("/admin/api/check")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(check, json!({"ok": true, "violations": []}));
    app.assert_invariants().await;
}

both_backends!(
    the_served_contract_is_the_committed_one_and_names_every_route,
    schemathesis_finds_nothing_against_the_contract,
);
