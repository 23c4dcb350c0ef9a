//! Refunds and disputes in runs of postings: one group holding every
//! decision a reversal can get (applied in memory against a payment the
//! database credited before, or a credit earlier in the same run; a
//! running total, and a refund counted on its own after one; an excess; an
//! account named that is not the payment's; another currency; late;
//! waiting for a payment never credited; a total already reached) gives
//! exactly what the same deliveries give one by one, in the same order.

use chrono::Duration;
use hookledger::domain::{
    AccountId, Basis, Currency, Direction, Link, Movement, NormalisedEvent, PositiveAmount,
    Reversal, ReverseRequest,
};

use crate::group_decisions::{
    Mix, Plan, Planned, group_as_one_by_one, group_as_one_by_one_counted, one_by_one_as, two_apps,
};
use crate::helpers::Backend;

/// What a reversal of `payment` asks, beyond the defaults (a refund of
/// USD `amount`, counted on its own; with `undoes`, a reinstatement).
struct Refund<'a> {
    payment: &'a str,
    amount: i64,
    sequence: i64,
    basis: Basis,
    account: Option<&'a str>,
    currency: &'a str,
    undoes: Option<String>,
}

impl<'a> Refund<'a> {
    fn of(payment: &'a str, amount: i64, sequence: i64) -> Self {
        Refund {
            payment,
            amount,
            sequence,
            basis: Basis::Each,
            account: None,
            currency: "USD",
            undoes: None,
        }
    }

    fn event(self, plan: &mut Plan) -> NormalisedEvent {
        let direction = match self.undoes {
            Some(_) => Direction::Credit,
            None => Direction::Debit,
        };
        plan.event(Movement::Reverse(ReverseRequest {
            direction,
            currency: Currency::parse(self.currency).unwrap(),
            amount: PositiveAmount::new(self.amount).unwrap(),
            account: self.account.map(|a| AccountId::parse(a).unwrap()),
            sequence: self.sequence,
            reversal: Reversal {
                payment_ref: self.payment.to_owned(),
                basis: self.basis,
                undoes: self.undoes,
            },
        }))
    }
}

/// A USD credit of `amount` to `account`, paying `link`.
fn credit(
    plan: &mut Plan,
    account: &str,
    link: Link,
    amount: i64,
    sequence: i64,
) -> NormalisedEvent {
    let mut posting = plan.posting(Direction::Credit, link, sequence);
    posting.account = AccountId::parse(account).unwrap();
    posting.currency = Currency::parse("USD").unwrap();
    posting.amount = PositiveAmount::new(amount).unwrap();
    plan.event(Movement::Post(posting))
}

/// Each event a delivery of `source`'s, a second apart.
fn deliveries(plan: &Plan, source: &'static str, events: Vec<NormalisedEvent>) -> Vec<Planned> {
    events
        .into_iter()
        .zip(0..)
        .map(|(event, n)| Planned {
            source,
            events: vec![event],
            body: format!("{{\"{source}\":{n}}}").into_bytes(),
            received_at: plan.start + Duration::seconds(n),
        })
        .collect()
}

async fn a_run_of_refunds_decides_as_one_by_one(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let pair = (&together, &alone);
    let mut plan = Plan::new(11, Mix::Payments);
    // `pay_old` credited to acct_a before the group.
    let before = credit(
        &mut plan,
        "acct_a",
        Link::Pays("pay_old".to_owned()),
        1_000,
        100,
    );
    let before = deliveries(&plan, "lenient", vec![before]);
    one_by_one_as([&together, &alone], &sources, &before, "applied").await;
    let total = |payment, amount, sequence| Refund {
        basis: Basis::Total,
        ..Refund::of(payment, amount, sequence)
    };
    let events = vec![
        // Against the row credited before: applied.
        Refund::of("pay_old", 300, 110).event(&mut plan),
        // A payment credited in the run, and its running totals.
        credit(
            &mut plan,
            "acct_b",
            Link::Pays("pay_new".to_owned()),
            1_000,
            120,
        ),
        total("pay_new", 400, 121).event(&mut plan),
        // One refund on its own after a running total: rejected.
        Refund::of("pay_new", 100, 122).event(&mut plan),
        total("pay_new", 700, 123).event(&mut plan),
        // A total already reached: ignored.
        total("pay_new", 650, 124).event(&mut plan),
        // More than `pay_old` has left: rejected.
        Refund::of("pay_old", 800, 130).event(&mut plan),
        // Naming another account than the payment's: rejected.
        Refund {
            account: Some("acct_c"),
            ..Refund::of("pay_old", 50, 131)
        }
        .event(&mut plan),
        // Naming the payment's own account: applied.
        Refund {
            account: Some("acct_a"),
            ..Refund::of("pay_old", 50, 132)
        }
        .event(&mut plan),
        // In another currency than the payment's: rejected.
        Refund {
            currency: "EUR",
            ..Refund::of("pay_old", 10, 133)
        }
        .event(&mut plan),
        // Below acct_a's guard: applied late (`lenient`).
        Refund::of("pay_old", 100, 105).event(&mut plan),
        // A payment never credited: waits.
        Refund::of("pay_never", 10, 140).event(&mut plan),
        // A posting after the reversals decided alone, on their accounts.
        credit(&mut plan, "acct_a", Link::None, 5, 150),
        credit(&mut plan, "acct_b", Link::None, 7, 151),
    ];
    let group = deliveries(&plan, "lenient", events);
    let (seen, in_memory) =
        group_as_one_by_one_counted(pair, &sources, &group, "a run of refunds").await;
    // The refunds applied, the credit of `pay_new` and the two last credits;
    // every other event alone.
    assert_eq!(in_memory, 8);
    let statuses: Vec<&str> = seen.iter().map(|o| o.status.as_str()).collect();
    assert_eq!(
        statuses,
        [
            "applied",
            "applied",
            "applied",
            "rejected",
            "applied",
            "ignored",
            "rejected",
            "rejected",
            "applied",
            "rejected",
            "applied",
            "unmatched",
            "applied",
            "applied",
        ]
    );
    assert!(seen[10].late, "{:?}", seen[10]);
    // 1,000 less 300, 50 and 100, plus 5; 1,000 less 700, plus 7.
    assert_eq!(together.balance("acct_a", "USD").await, 555);
    assert_eq!(together.balance("acct_b", "USD").await, 307);
    together.assert_invariants().await;
}

/// `strict` holds late events: its credit of a payment, below acct_a's
/// guard, is held in the run, so its refund later in the run finds the
/// payment not credited and waits, as one by one.
async fn a_refund_of_a_credit_the_run_holds_waits(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let pair = (&together, &alone);
    let mut plan = Plan::new(13, Mix::Payments);
    let before = credit(&mut plan, "acct_a", Link::None, 100, 100);
    let before = deliveries(&plan, "strict", vec![before]);
    one_by_one_as([&together, &alone], &sources, &before, "applied").await;
    let events = vec![
        credit(
            &mut plan,
            "acct_a",
            Link::Pays("pay_held".to_owned()),
            500,
            50,
        ),
        Refund::of("pay_held", 20, 110).event(&mut plan),
        credit(&mut plan, "acct_a", Link::None, 3, 120),
    ];
    let group = deliveries(&plan, "strict", events);
    let (seen, in_memory) =
        group_as_one_by_one_counted(pair, &sources, &group, "a refund of a held credit").await;
    assert_eq!(in_memory, 1);
    let statuses: Vec<&str> = seen.iter().map(|o| o.status.as_str()).collect();
    assert_eq!(statuses, ["stale", "unmatched", "applied"]);
    assert_eq!(together.balance("acct_a", "USD").await, 103);
}

/// `shared-a` credits a payment in the run and `shared-b`, of the same
/// scope, refunds it: the run does not know the refund's account (the
/// credit is another source's), so the refund is decided alone, and moves
/// `shared-b`'s guard and the balance the credit posted to, which the run
/// holds: a credit after it (on that balance) and one of `shared-b`'s
/// below the refund (late, then) must see them as the refund left them,
/// and so must a running total of `shared-a`'s (which posts what the
/// payment's row does not count yet).
async fn a_refund_decided_alone_moves_rows_the_run_reads_again(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let pair = (&together, &alone);
    let mut plan = Plan::new(17, Mix::Payments);
    let paid = credit(&mut plan, "acct_s", Link::Pays("pay_s".to_owned()), 500, 10);
    let refund = Refund::of("pay_s", 50, 100).event(&mut plan);
    let after = credit(&mut plan, "acct_s", Link::None, 5, 20);
    let below = credit(&mut plan, "acct_s", Link::None, 7, 60);
    let total = Refund {
        basis: Basis::Total,
        ..Refund::of("pay_s", 80, 200)
    }
    .event(&mut plan);
    let events = vec![paid, refund, after, below, total];
    let mut group = deliveries(&plan, "shared-a", events);
    group[1].source = "shared-b";
    group[3].source = "shared-b";
    let (seen, in_memory) =
        group_as_one_by_one_counted(pair, &sources, &group, "a refund decided alone").await;
    // All but `shared-b`'s refund.
    assert_eq!(in_memory, 4);
    let statuses: Vec<&str> = seen.iter().map(|o| o.status.as_str()).collect();
    assert_eq!(statuses, ["applied"; 5]);
    assert!(seen[3].late, "{:?}", seen[3]);
    // 500 less 50, plus 5 and 7, less the 30 the total adds.
    assert_eq!(together.balance("acct_s", "USD").await, 432);
}

/// `strict` credits a payment to acct_a below acct_a's guard (held), then
/// to acct_b (applied, in memory), then refunds it: the run took the
/// refund's account to be acct_a (the first credit's), but it is matched
/// to acct_b, alone, and moves acct_b's guard and balance, which the run
/// holds: a credit to acct_b in another currency numbered below the
/// refund is late (and held), and one in the same currency posts after
/// the refund.
async fn a_refund_matched_elsewhere_than_the_run_took_it(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let pair = (&together, &alone);
    let mut plan = Plan::new(19, Mix::Payments);
    let before = credit(&mut plan, "acct_a", Link::None, 100, 100);
    let before = deliveries(&plan, "strict", vec![before]);
    one_by_one_as([&together, &alone], &sources, &before, "applied").await;
    let pays = || Link::Pays("pay_moved".to_owned());
    let held = credit(&mut plan, "acct_a", pays(), 500, 50);
    let paid = credit(&mut plan, "acct_b", pays(), 400, 10);
    let refund = Refund::of("pay_moved", 30, 20).event(&mut plan);
    let mut euros = credit(&mut plan, "acct_b", Link::None, 9, 15);
    if let Movement::Post(posting) = &mut euros.movement {
        posting.currency = Currency::parse("EUR").unwrap();
    }
    let after = credit(&mut plan, "acct_b", Link::None, 2, 30);
    let group = deliveries(&plan, "strict", vec![held, paid, refund, euros, after]);
    let (seen, in_memory) =
        group_as_one_by_one_counted(pair, &sources, &group, "a refund matched elsewhere").await;
    let statuses: Vec<&str> = seen.iter().map(|o| o.status.as_str()).collect();
    assert_eq!(
        statuses,
        ["stale", "applied", "applied", "stale", "applied"]
    );
    // The credit of acct_b and the last one.
    assert_eq!(in_memory, 2);
    assert_eq!(together.balance("acct_b", "USD").await, 372);
}

/// A payment credited in parts, one part before the group: the group's
/// part is decided alone (its row holds a credit) and applies, and a
/// refund after it in the group must not be released by it (one by one
/// it had not arrived yet): the run ends before the refund.
async fn a_refund_after_a_part_decided_alone_is_not_released_by_it(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let pair = (&together, &alone);
    let mut plan = Plan::new(23, Mix::Payments);
    let part = || Link::PaysPart("pay_parts".to_owned());
    let first = credit(&mut plan, "acct_a", part(), 300, 10);
    let first = deliveries(&plan, "demo", vec![first]);
    one_by_one_as([&together, &alone], &sources, &first, "applied").await;
    let events = vec![
        credit(&mut plan, "acct_a", part(), 200, 20),
        Refund::of("pay_parts", 450, 30).event(&mut plan),
        credit(&mut plan, "acct_a", Link::None, 1, 40),
    ];
    let group = deliveries(&plan, "demo", events);
    let seen = group_as_one_by_one(pair, &sources, &group, "a refund after a part").await;
    let statuses: Vec<&str> = seen.iter().map(|o| o.status.as_str()).collect();
    assert_eq!(statuses, ["applied"; 3]);
    assert!(seen.iter().all(|o| o.released == 0), "{seen:?}");
    assert_eq!(together.balance("acct_a", "USD").await, 51);
}

/// A reinstatement that comes before the refund it undoes, in one group:
/// one by one it waits for a refund never received; a group must say the
/// same (the refund's intent, later in the group, is not read first).
async fn a_reinstatement_before_its_refund_waits_as_one_by_one(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let pair = (&together, &alone);
    let mut plan = Plan::new(29, Mix::Payments);
    let paid = credit(
        &mut plan,
        "acct_a",
        Link::Pays("pay_won".to_owned()),
        500,
        10,
    );
    let paid = deliveries(&plan, "lenient", vec![paid]);
    one_by_one_as([&together, &alone], &sources, &paid, "applied").await;
    let refund = Refund::of("pay_won", 100, 30).event(&mut plan);
    let reinstated = Refund {
        undoes: Some(refund.event_id.as_str().to_owned()),
        ..Refund::of("pay_won", 100, 40)
    }
    .event(&mut plan);
    let events = vec![
        reinstated,
        refund,
        credit(&mut plan, "acct_a", Link::None, 1, 50),
    ];
    let group = deliveries(&plan, "lenient", events);
    let seen = group_as_one_by_one(pair, &sources, &group, "a reinstatement first").await;
    let statuses: Vec<&str> = seen.iter().map(|o| o.status.as_str()).collect();
    assert_eq!(statuses, ["stale", "applied", "applied"]);
}

/// `shared-a` credited a payment before the group; in the group,
/// `shared-a` credits it again (`duplicate_effect`, decided alone) and then
/// `shared-b`, of the same scope, refunds it. One by one, the second credit
/// finds no refund waiting; in a group it must not find the refund's
/// intent either (and lock `shared-b`'s guard on its account for it).
async fn a_second_credit_decided_alone_does_not_see_a_later_refund(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let pair = (&together, &alone);
    let mut plan = Plan::new(31, Mix::Payments);
    let pays = || Link::Pays("pay_twice".to_owned());
    let first = credit(&mut plan, "acct_a", pays(), 500, 10);
    let first = deliveries(&plan, "shared-a", vec![first]);
    one_by_one_as([&together, &alone], &sources, &first, "applied").await;
    let again = credit(&mut plan, "acct_b", pays(), 500, 20);
    let refund = Refund::of("pay_twice", 40, 30).event(&mut plan);
    let after = credit(&mut plan, "acct_b", Link::None, 1, 40);
    let mut group = deliveries(&plan, "shared-a", vec![again, refund, after]);
    group[1].source = "shared-b";
    let seen = group_as_one_by_one(pair, &sources, &group, "a second credit").await;
    let statuses: Vec<&str> = seen.iter().map(|o| o.status.as_str()).collect();
    assert_eq!(statuses, ["duplicate_effect", "applied", "applied"]);
    assert_eq!(together.balance("acct_a", "USD").await, 460);
}

crate::both_backends!(
    a_second_credit_decided_alone_does_not_see_a_later_refund,
    a_run_of_refunds_decides_as_one_by_one,
    a_refund_of_a_credit_the_run_holds_waits,
    a_refund_decided_alone_moves_rows_the_run_reads_again,
    a_refund_matched_elsewhere_than_the_run_took_it,
    a_refund_after_a_part_decided_alone_is_not_released_by_it,
    a_reinstatement_before_its_refund_waits_as_one_by_one
);
