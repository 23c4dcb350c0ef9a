//! Refunds from a sender of one's own (`generic-hmac`, `standard-webhooks`
//! with `payment_path` and `reverses_path`), end to end on both backends:
//! the same matching every provider kind has. Each file gives a source as a
//! [`Kind`](crate::kinds::Kind), runs the scenarios every kind with refunds
//! runs, and the ones below: partial refunds up to the payment and not a
//! cent further, two refunds racing for what is left, a refund that names
//! no payment.

pub mod generic_hmac;
pub mod standard_webhooks;

use futures::future::join_all;
use serde_json::Value;

use crate::helpers::Backend;
use crate::kinds::Kind;

/// Refunds of one payment add up to what it credited, exactly, and an
/// excess is rejected naming what the payment credited and what was
/// refunded before; nothing of it is posted.
pub async fn partial_refunds_add_up_to_the_payment_and_no_further(backend: Backend, kind: &Kind) {
    let app = kind.spawn(backend).await;
    kind.send(&app, &(kind.payment)("e1", "pay_1", 1000)).await;
    for (event_id, refund_id, amount) in [("e2", "rf_1", 300), ("e3", "rf_2", 500)] {
        let answer = kind
            .send(&app, &(kind.refund)(event_id, refund_id, "pay_1", amount))
            .await;
        assert_eq!(answer["status"], "applied", "{answer}");
    }
    assert_eq!(app.balance("acct_1", "USD").await, 200);
    let excess = (kind.refund)("e4", "rf_3", "pay_1", 300);
    assert_eq!(kind.send(&app, &excess).await["status"], "rejected");
    let stored = app.event(kind.source, &(kind.key_of)(&excess)).await;
    assert_eq!(
        stored["reason"],
        "refund of USD 3.00 exceeds what payment pay_1 has left: it credited USD 10.00, and \
         USD 8.00 was refunded before"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 200);
    // What is left can still be refunded, to the cent.
    let rest = kind
        .send(&app, &(kind.refund)("e5", "rf_4", "pay_1", 200))
        .await;
    assert_eq!(rest["status"], "applied", "{rest}");
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    let amounts: Vec<i64> = app
        .entries("acct_1")
        .await
        .iter()
        .map(|e| e["amount_minor"].as_i64().unwrap())
        .collect();
    assert_eq!(amounts, [-200, -500, -300, 1000]);
    app.assert_invariants().await;
}

/// Two refunds of one payment sent at once, together more than it
/// credited: exactly one applies (whichever), the other is rejected, and
/// the balance is exact. Two that fit together both apply.
pub async fn two_refunds_racing_never_take_more_than_the_payment(backend: Backend, kind: &Kind) {
    let app = kind.spawn(backend).await;
    let mut expected = 0;
    for round in 0..4_i64 {
        let payment = format!("pay_{round}");
        let credit = (kind.payment)(&format!("p{round}"), &payment, 1000);
        assert_eq!(kind.send(&app, &credit).await["status"], "applied");
        let amounts = [600 + round, 500];
        let refunds: Vec<Value> = amounts
            .iter()
            .enumerate()
            .map(|(i, amount)| {
                let id = format!("{round}_{i}");
                (kind.refund)(&format!("r{id}"), &format!("rf_{id}"), &payment, *amount)
            })
            .collect();
        let answers = join_all(refunds.iter().map(|r| kind.send(&app, r))).await;
        let statuses: Vec<&str> = answers
            .iter()
            .map(|a| a["status"].as_str().unwrap())
            .collect();
        let winner = match statuses[..] {
            ["applied", "rejected"] => 0,
            ["rejected", "applied"] => 1,
            _ => panic!("exactly one refund applies: {answers:?}"),
        };
        expected += 1000 - amounts[winner];
        assert_eq!(
            app.balance("acct_1", "USD").await,
            expected,
            "round {round}"
        );
        let loser = app
            .event(kind.source, &(kind.key_of)(&refunds[1 - winner]))
            .await;
        let reason = loser["reason"].as_str().unwrap();
        assert!(
            reason.contains(&format!(
                "payment {payment} has left: it credited USD 10.00"
            )),
            "{reason}"
        );
    }
    let credit = (kind.payment)("p_fit", "pay_fit", 1000);
    kind.send(&app, &credit).await;
    let refunds = [
        (kind.refund)("r_fit_0", "rf_fit_0", "pay_fit", 400),
        (kind.refund)("r_fit_1", "rf_fit_1", "pay_fit", 600),
    ];
    let answers = join_all(refunds.iter().map(|r| kind.send(&app, r))).await;
    assert!(
        answers.iter().all(|a| a["status"] == "applied"),
        "{answers:?}"
    );
    assert_eq!(app.balance("acct_1", "USD").await, expected);
    app.assert_invariants().await;
}

/// A debit of a source whose debits are refunds, naming no payment at the
/// source's `reverses_path`: rejected with the path named, never posted as
/// a plain debit.
pub async fn a_refund_naming_no_payment_is_rejected(
    backend: Backend,
    kind: &Kind,
    nameless: Value,
    path: &str,
) {
    let app = kind.spawn(backend).await;
    kind.send(&app, &(kind.payment)("e1", "pay_1", 1000)).await;
    let answer = kind.send(&app, &nameless).await;
    assert_eq!(answer["status"], "rejected", "{answer}");
    let stored = app.event(kind.source, &(kind.key_of)(&nameless)).await;
    assert_eq!(stored["reason"], format!("no payment id at {path}"));
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    app.assert_invariants().await;
}
