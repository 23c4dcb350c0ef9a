//! Contiguous streams in runs of postings (`ingest::run_of_postings`): a
//! run decides a stream's next number in memory, and every other number
//! of a stream (a park, a release, a late number, a number taken) alone
//! inside the run; each group here gives exactly what the same deliveries
//! give one by one: the same answers, the same rows. A release decided
//! alone moves balances and guards the run read before (in the number's
//! currency or another), which the run must read again before the events
//! after it: a credit, or a debit that the released balance can no longer
//! pay (`negative_balance`).

use chrono::Duration;
use hookledger::domain::{
    AccountId, Currency, Direction, Link, Movement, NormalisedEvent, PositiveAmount,
};

use crate::group_decisions::{
    Mix, Plan, Planned, group_as_one_by_one, group_as_one_by_one_counted, on_both, one_by_one_as,
    two_apps,
};
use crate::helpers::Backend;

/// A stream's event waits (parked) in EUR; then one group holds the
/// number before it, in USD, and a `demo` credit of the same account in
/// EUR. The number is decided alone inside the run (its stream has a
/// parked event) and releases the parked one, which moves the EUR balance
/// the run read before: the run must read it again before the credit.
async fn a_release_inside_a_run_moves_a_balance_the_run_reads_again(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let mut plan = Plan::new(11, Mix::Every);
    let account = AccountId::parse("acct_release").unwrap();
    let mut event = |currency: &str, sequence: i64, explicit: bool| {
        let mut posting = plan.posting(Direction::Credit, Link::None, sequence);
        posting.account = account.clone();
        posting.currency = Currency::parse(currency).unwrap();
        posting.explicit_sequence = explicit;
        plan.event(Movement::Post(posting))
    };
    let parked = event("EUR", 2, true);
    let filler = event("USD", 1, true);
    let credit = event("EUR", 50, false);
    let at = plan.start;
    let delivery = |source: &'static str, event: NormalisedEvent, n: i64| Planned {
        source,
        events: vec![event],
        body: format!("{{\"release\":{n}}}").into_bytes(),
        received_at: at + Duration::seconds(n),
    };
    let first = [delivery("ledger", parked, 0)];
    one_by_one_as([&together, &alone], &sources, &first, "waiting").await;
    let group = [delivery("ledger", filler, 1), delivery("demo", credit, 2)];
    let pair = (&together, &alone);
    let seen = group_as_one_by_one(pair, &sources, &group, "a release inside a run").await;
    assert_eq!(seen[0].released, 1, "{seen:?}");
    together.assert_invariants().await;
}

/// A `ledger` event of `acct_stream` (numbered), from `plan`.
fn numbered(
    plan: &mut Plan,
    direction: Direction,
    currency: &str,
    sequence: i64,
) -> NormalisedEvent {
    let mut posting = plan.posting(direction, Link::None, sequence);
    posting.account = AccountId::parse("acct_stream").unwrap();
    posting.currency = Currency::parse(currency).unwrap();
    posting.explicit_sequence = true;
    plan.event(Movement::Post(posting))
}

/// `events`, each a `ledger` delivery of its own, from `n` on.
fn ledger_deliveries(plan: &Plan, events: Vec<NormalisedEvent>, n: i64) -> Vec<Planned> {
    events
        .into_iter()
        .zip(n..)
        .map(|(event, n)| Planned {
            source: "ledger",
            events: vec![event],
            body: format!("{{\"stream\":{n}}}").into_bytes(),
            received_at: plan.start + Duration::seconds(n),
        })
        .collect()
}

/// Number 3 waits; then one run holds number 2, which releases it, and
/// after it a redelivery of number 3: one by one the redelivery is
/// answered with the status the release gave it, so a run counts it after
/// the events before it that are decided alone.
async fn a_redelivery_after_its_release_in_a_run_is_answered_applied(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let mut plan = Plan::new(13, Mix::Every);
    let first = numbered(&mut plan, Direction::Credit, "USD", 1);
    let waits = numbered(&mut plan, Direction::Credit, "USD", 3);
    let gap = numbered(&mut plan, Direction::Credit, "USD", 2);
    let stored = ledger_deliveries(&plan, vec![first, waits], 0);
    let apps = [&together, &alone];
    one_by_one_as(apps, &sources, &stored[..1], "applied").await;
    one_by_one_as(apps, &sources, &stored[1..], "waiting").await;
    let mut group = ledger_deliveries(&plan, vec![gap], 2);
    group.push(stored[1].clone());
    let pair = (&together, &alone);
    let seen = group_as_one_by_one(pair, &sources, &group, "a redelivery after a release").await;
    assert_eq!(seen[0].released, 1, "{seen:?}");
    assert!(seen[1].duplicate, "{seen:?}");
    assert_eq!(seen[1].status.as_str(), "applied", "{seen:?}");
}

/// A parked EUR debit the guard has passed (as when instances disagree
/// on the source's mode: here the guard is moved by hand); then one run
/// holds a later EUR number (parked) and the next USD number, whose
/// release finds the EUR debit late and holds it. One by one that release
/// leaves an EUR balance row at zero (it locked the row to post in it);
/// the run must leave the same rows.
async fn a_release_in_a_run_leaves_the_rows_one_by_one_leaves(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let mut plan = Plan::new(17, Mix::Every);
    let first = numbered(&mut plan, Direction::Credit, "USD", 1);
    let passed = numbered(&mut plan, Direction::Debit, "EUR", 3);
    let ahead = numbered(&mut plan, Direction::Credit, "EUR", 9);
    let next = numbered(&mut plan, Direction::Credit, "USD", 6);
    let stored = ledger_deliveries(&plan, vec![first, passed], 0);
    let apps = [&together, &alone];
    one_by_one_as(apps, &sources, &stored[..1], "applied").await;
    one_by_one_as(apps, &sources, &stored[1..], "waiting").await;
    let guard_at_5 = "update sequence_guards set last_sequence = 5 \
        where source = 'ledger' and account_id = 'acct_stream'";
    on_both(apps, guard_at_5).await;
    let group = ledger_deliveries(&plan, vec![ahead, next], 2);
    let pair = (&together, &alone);
    let seen = group_as_one_by_one(pair, &sources, &group, "a release holding a late debit").await;
    assert_eq!(seen[0].status.as_str(), "waiting", "{seen:?}");
    assert_eq!(seen[1].status.as_str(), "applied", "{seen:?}");
}

/// Numbers 1 to 3 applied, then the stream's guard moved back to 1 by
/// hand (no API does that to a contiguous stream: an operator's reset is
/// refused there; the holder check is what one by one has for it). A new
/// event numbered 2 is then the next number, but its number is taken: one
/// by one it is rejected, naming the holder; a run must find the holder
/// outside it, and decide it alone.
async fn a_number_held_outside_a_run_is_rejected_as_one_by_one(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let mut plan = Plan::new(19, Mix::Every);
    let applied: Vec<NormalisedEvent> = (1..=3)
        .map(|n| numbered(&mut plan, Direction::Credit, "USD", n))
        .collect();
    let again = numbered(&mut plan, Direction::Credit, "USD", 2);
    let after = numbered(&mut plan, Direction::Credit, "EUR", 3);
    let stored = ledger_deliveries(&plan, applied, 0);
    let apps = [&together, &alone];
    one_by_one_as(apps, &sources, &stored, "applied").await;
    let guard_at_1 = "update sequence_guards set last_sequence = 1 \
        where source = 'ledger' and account_id = 'acct_stream'";
    on_both(apps, guard_at_1).await;
    let group = ledger_deliveries(&plan, vec![again, after], 3);
    let pair = (&together, &alone);
    let seen = group_as_one_by_one(pair, &sources, &group, "a number held outside a run").await;
    assert_eq!(seen[0].status.as_str(), "rejected", "{seen:?}");
}

/// One group holds number 3 twice (two events, one account), past a gap:
/// one by one the first parks and the second is rejected, naming it. A run
/// inserts its intents first, so the first's holder check would find the
/// second: the second number must start another run.
async fn a_number_taken_twice_in_a_group_is_decided_as_one_by_one(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let mut plan = Plan::new(23, Mix::Every);
    let first = numbered(&mut plan, Direction::Credit, "USD", 1);
    let stored = ledger_deliveries(&plan, vec![first], 0);
    one_by_one_as([&together, &alone], &sources, &stored, "applied").await;
    let taken = numbered(&mut plan, Direction::Credit, "USD", 3);
    let again = numbered(&mut plan, Direction::Credit, "USD", 3);
    let group = ledger_deliveries(&plan, vec![taken, again], 1);
    let pair = (&together, &alone);
    let seen = group_as_one_by_one(pair, &sources, &group, "a number taken twice").await;
    assert_eq!(seen[0].status.as_str(), "waiting", "{seen:?}");
    assert_eq!(seen[1].status.as_str(), "rejected", "{seen:?}");
}

/// Number 3, a debit of 80, waits; then one run holds number 2 (a credit
/// of 10, decided alone: it releases number 3, leaving 30 of 110) and two
/// `demo` debits of 20 of the same account and currency: the first
/// applies (in memory), the second would take the balance below zero and
/// is held `stale` (`negative_balance`), as one by one. A run that kept
/// the balance it read before the release (100) would apply both.
async fn a_debit_after_a_release_in_a_run_is_held_below_zero(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let mut plan = Plan::new(29, Mix::Every);
    let amount = |mut event: NormalisedEvent, minor: i64| {
        if let Movement::Post(posting) = &mut event.movement {
            posting.amount = PositiveAmount::new(minor).unwrap();
        }
        event
    };
    let first = amount(numbered(&mut plan, Direction::Credit, "USD", 1), 100);
    let waits = amount(numbered(&mut plan, Direction::Debit, "USD", 3), 80);
    let filler = amount(numbered(&mut plan, Direction::Credit, "USD", 2), 10);
    let stored = ledger_deliveries(&plan, vec![first, waits], 0);
    let apps = [&together, &alone];
    one_by_one_as(apps, &sources, &stored[..1], "applied").await;
    one_by_one_as(apps, &sources, &stored[1..], "waiting").await;
    let mut group = ledger_deliveries(&plan, vec![filler], 2);
    for n in 0..2 {
        let mut posting = plan.posting(Direction::Debit, Link::None, 50 + n);
        posting.account = AccountId::parse("acct_stream").unwrap();
        posting.currency = Currency::parse("USD").unwrap();
        posting.amount = PositiveAmount::new(20).unwrap();
        group.push(Planned {
            source: "demo",
            events: vec![plan.event(Movement::Post(posting))],
            body: format!("{{\"spend\":{n}}}").into_bytes(),
            received_at: plan.start + Duration::seconds(3 + n),
        });
    }
    let pair = (&together, &alone);
    let context = "a debit after a release";
    let (seen, in_memory) = group_as_one_by_one_counted(pair, &sources, &group, context).await;
    assert_eq!(seen[0].released, 1, "{seen:?}");
    let statuses: Vec<&str> = seen.iter().map(|o| o.status.as_str()).collect();
    assert_eq!(statuses, ["applied", "applied", "stale"], "{seen:?}");
    // The first debit in memory, against the balance read again after the
    // release; the second is decided alone, as every hold is.
    assert_eq!(in_memory, 1, "the first debit is decided in memory");
    let intents = crate::table_rows::table_json(&together, "intents", None).await;
    let held = intents
        .iter()
        .find(|row| row["event_id"] == seen[2].event_id.as_str())
        .expect("the held debit's intent");
    let reason = held["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("below zero"), "{held}");
    let balances = crate::table_rows::table_json(&together, "balances", None).await;
    let stream: Vec<i64> = balances
        .iter()
        .filter(|row| row["account_id"] == "acct_stream")
        .map(|row| row["balance_minor"].as_i64().unwrap())
        .collect();
    assert_eq!(stream, [10]);
    together.assert_invariants().await;
}

crate::both_backends!(
    a_release_inside_a_run_moves_a_balance_the_run_reads_again,
    a_redelivery_after_its_release_in_a_run_is_answered_applied,
    a_release_in_a_run_leaves_the_rows_one_by_one_leaves,
    a_number_held_outside_a_run_is_rejected_as_one_by_one,
    a_number_taken_twice_in_a_group_is_decided_as_one_by_one,
    a_debit_after_a_release_in_a_run_is_held_below_zero
);
