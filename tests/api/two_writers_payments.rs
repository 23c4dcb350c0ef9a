//! Two instances on one database, each with its own group writer, under a
//! load of payments. Each payment is credited by one event, or by two that
//! name different accounts (a mapping that reads the account from two
//! places); half of them are refunded by a refund that names no account,
//! as a provider's does. Every event is shuffled (a refund may come before
//! its payment and wait `unmatched`), sent to one instance or the other,
//! and a tenth to both at once: two groups may credit the same payment
//! holding no account in common, or refund it.
//!
//! Both writers put payments' credits in runs (their payment rows created
//! or locked in one statement, `store::write::run_payments`) and decide
//! alone what a run does not. So each payment is credited exactly once, by
//! one of its events, to the account that one names (the other is a
//! `duplicate_effect`); every refund is applied once (at once, or when its
//! payment's credit releases it); every balance is exactly what the
//! payments booked to it left; and PostgreSQL counted no deadlock.

use std::collections::HashMap;

use futures::StreamExt;
use futures::stream;
use hookledger::providers::Sample;
use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{Backend, Options, TestApp, body_of, credit_seq, debit_seq, json_with_status};
use crate::ordering_load::{account, shuffle};

const ACCOUNTS: i64 = 4;
const PAYMENTS: i64 = 96;
const SENDERS: usize = 32;

fn amount(p: i64) -> i64 {
    2_000 + p
}

/// Every third payment is credited twice, the second time to the next
/// account: whichever credit comes first books the payment, to its own
/// account.
fn credited_twice(p: i64) -> bool {
    p % 3 == 0
}

/// What payment `p`'s refund takes, if it has one.
fn refund(p: i64) -> Option<i64> {
    (p % 2 == 0).then_some(100 + p)
}

fn paying(sample: Sample, p: i64) -> Sample {
    Sample {
        payment: Some(format!("pay_{p}")),
        ..sample
    }
}

/// Every event of payment `p`: its credit, a second credit of it to
/// another account, and its refund.
fn events_of(p: i64) -> Vec<Sample> {
    let account = account(p % ACCOUNTS);
    let mut events = vec![paying(
        credit_seq(&format!("c{p}"), &account, amount(p), 10 + 3 * p),
        p,
    )];
    if credited_twice(p) {
        let other = crate::ordering_load::account((p + 1) % ACCOUNTS);
        let again = credit_seq(&format!("c{p}b"), &other, amount(p), 11 + 3 * p);
        events.push(paying(again, p));
    }
    if let Some(taken) = refund(p) {
        let debit = debit_seq(&format!("r{p}"), &account, taken, 12 + 3 * p);
        events.push(paying(debit, p));
    }
    events
}

/// The body `sample` is sent as: a refund names no account, as a
/// provider's does not (it posts to whichever the payment credited), so
/// only the payment's key (`store::WriteKeys`) orders it against a credit.
fn body(sample: &Sample) -> Vec<u8> {
    let mut body: Value = serde_json::from_slice(&body_of(sample)).unwrap();
    if sample.event_type.is_some() {
        body["data"].as_object_mut().unwrap().remove("account_id");
    }
    body.to_string().into_bytes()
}

/// Delivers `sample` to `sales` until it is answered 200, retrying a 503
/// as a provider would; its answer.
async fn sent(app: &TestApp, sample: &Sample) -> Value {
    let body = body(sample);
    for _ in 0..20 {
        let response = app.deliver_body("sales", &sample.event_id, &body).await;
        if response.status() != StatusCode::SERVICE_UNAVAILABLE {
            return json_with_status(response, StatusCode::OK).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{} answered 503 twenty times", sample.event_id);
}

async fn two_writers_credit_each_payment_once(backend: Backend) {
    // Late events apply (a shuffled load is mostly late), so every
    // outcome is known in advance.
    let sources = crate::direct::sales_source("on_stale = \"apply\"");
    let options = || Options {
        extra_sources: &sources,
        ..Options::default()
    };
    let first = TestApp::spawn_with(backend, options()).await;
    let second = first.another_instance_with(&options()).await;
    let all: Vec<Sample> = (0..PAYMENTS).flat_map(events_of).collect();
    let mut sends: Vec<(usize, &Sample)> =
        all.iter().enumerate().map(|(i, s)| (i % 2, s)).collect();
    sends.extend(
        all.iter()
            .enumerate()
            .step_by(10)
            .map(|(i, sample)| (1 - i % 2, sample)),
    );
    shuffle(&mut sends, 0x2_0002);
    let apps = [&first, &second];
    let answers: Vec<_> = stream::iter(sends)
        .map(|(instance, sample)| sent(apps[instance], sample))
        .buffer_unordered(SENDERS)
        .collect()
        .await;
    let new = answers.iter().filter(|a| a["duplicate"] == false).count();
    assert_eq!(new, all.len(), "each event new exactly once");

    let intents = crate::table_rows::table_json(&first, "intents", None).await;
    let mut statuses: HashMap<&str, usize> = HashMap::new();
    for row in &intents {
        *statuses.entry(row["status"].as_str().unwrap()).or_default() += 1;
    }
    let seconds = (0..PAYMENTS).filter(|&p| credited_twice(p)).count();
    let refunds = (0..PAYMENTS).filter_map(refund).count();
    let wanted = HashMap::from([
        ("applied", PAYMENTS as usize + refunds),
        ("duplicate_effect", seconds),
    ]);
    assert_eq!(statuses, wanted, "every intent's status");

    let payments = crate::table_rows::table_json(&first, "payments", None).await;
    assert_eq!(payments.len(), PAYMENTS as usize, "one row per payment");
    // What each account holds: the payments booked to it, less refunds.
    let mut left: HashMap<String, i64> = HashMap::new();
    for row in &payments {
        let p: i64 = row["payment_ref"].as_str().unwrap()["pay_".len()..]
            .parse()
            .unwrap();
        let booked = row["account_id"].as_str().unwrap();
        let mut may = vec![account(p % ACCOUNTS)];
        if credited_twice(p) {
            may.push(account((p + 1) % ACCOUNTS));
        }
        assert!(may.iter().any(|a| a == booked), "{row}");
        assert_eq!(row["credited_minor"], amount(p), "{row}");
        assert_eq!(row["reversed_minor"], refund(p).unwrap_or(0), "{row}");
        assert!(row["credited_by"].is_i64(), "credited whole by one: {row}");
        *left.entry(booked.to_owned()).or_default() += amount(p) - refund(p).unwrap_or(0);
    }
    for a in 0..ACCOUNTS {
        let name = account(a);
        let wanted = left.get(&name).copied().unwrap_or(0);
        assert_eq!(second.balance(&name, "USD").await, wanted, "{name}");
    }
    first.assert_invariants().await;
    if matches!(first.store(), hookledger::store::Store::Postgres(..)) {
        assert_eq!(crate::postgres::deadlocks(&first).await, 0);
    }
}

crate::both_backends!(two_writers_credit_each_payment_once);
