//! A group of deliveries committed together (the writer's way: runs of
//! postings decided in memory and written set-based, every other event
//! alone) gives exactly what the same deliveries give one by one, in the
//! same order: the same answer for each, and the same rows in every table;
//! and no set-based statement of the group fails (a run that disagreed
//! with the rows would break a key, and be run again alone). Random groups
//! of every kind of decision at once, from seeds printed on failure: new,
//! a redelivery of an event earlier in the group (and one with another
//! body), late credits and debits, a debit held by `negative_balance`,
//! contiguous numbers (of two streams, numbered from 1 and from 0) in
//! order, parked, and released by the gap-filler, a payment credited twice
//! (`duplicate_effect`), a refund before its payment (unmatched, released
//! by the credit) and after it, a refund larger than the payment, running
//! totals, refunds naming an account or in another currency, reinstatements,
//! batches, events with no effect. And groups made mostly of payments' credits,
//! which runs decide in memory where the payment is new to the database:
//! new payments whole and in parts, a part and a whole of one payment (each
//! way round), a payment credited before or earlier in the same run,
//! credits below their guard (applied, or held `stale` by a source that
//! holds late credits), refunds that came first and wait.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use hookledger::domain::{
    AccountId, Basis, Currency, Direction, EventId, Link, Movement, NormalisedEvent,
    PositiveAmount, Posting, Rejection, Reversal, ReverseRequest,
};
use hookledger::ingest::{Outcome, RawDelivery, commit_together_counted, ingest_direct};
use hookledger::receive::sha256_hex;
use hookledger::rng::SplitMix64;
use hookledger::source::Source;
use serde_json::Value;

use crate::helpers::{Backend, Options, TestApp};
use crate::outbox::http_destination;

/// A delivery as the test holds it: the source's name, its events, its body.
#[derive(Clone)]
pub(crate) struct Planned {
    pub source: &'static str,
    pub events: Vec<NormalisedEvent>,
    pub body: Vec<u8>,
    pub received_at: DateTime<Utc>,
}

const ACCOUNTS: [&str; 3] = ["acct_a", "acct_b", "acct_c"];
const CURRENCIES: [&str; 2] = ["USD", "EUR"];

/// What a plan's deliveries are mostly made of.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mix {
    /// Every kind of decision.
    Every,
    /// Payments' credits, with plain postings and refunds between them.
    Payments,
}

/// Random deliveries from `seed`.
pub(crate) struct Plan {
    mix: Mix,
    /// In every event and payment id: plans of several seeds go to one
    /// database, each with events and payments of its own.
    tag: u64,
    rng: SplitMix64,
    planned: Vec<Planned>,
    /// The next contiguous number per account, of the `ledger` source
    /// (numbered from 1) and of `ledger-small` (from 0, releasing 3 at a
    /// time: a longer backlog drains in later transactions).
    contiguous: [[i64; 3]; 2],
    /// Numbers skipped so far per account, for a later gap-filler.
    gaps: [[Vec<i64>; 3]; 2],
    payments: u64,
    /// Payments credited in parts so far.
    parted: u64,
    /// The refunds' event ids so far, for reinstatements.
    refunds: Vec<String>,
    events: u64,
    pub start: DateTime<Utc>,
}

impl Plan {
    pub(crate) fn new(seed: u64, mix: Mix) -> Self {
        Plan {
            mix,
            tag: seed,
            rng: SplitMix64::new(seed),
            planned: Vec::new(),
            contiguous: [[1; 3], [0; 3]],
            gaps: Default::default(),
            payments: 0,
            parted: 0,
            refunds: Vec::new(),
            events: 0,
            start: Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).unwrap(),
        }
    }

    fn pick<T: Copy>(&mut self, of: &[T]) -> T {
        of[self.rng.index(of.len())]
    }

    fn event_id(&mut self) -> EventId {
        self.events += 1;
        EventId::parse(&format!("evt_{}_{}", self.tag, self.events)).unwrap()
    }

    pub(crate) fn event(&mut self, movement: Movement) -> NormalisedEvent {
        NormalisedEvent {
            event_id: self.event_id(),
            event_type: "balance.change".to_owned(),
            object_id: Some(format!("obj_{}", self.events)),
            occurred_at: Some(self.start),
            movement,
            payload: None,
        }
    }

    pub(crate) fn posting(&mut self, direction: Direction, link: Link, sequence: i64) -> Posting {
        let account = self.pick(&ACCOUNTS);
        Posting {
            direction,
            account: AccountId::parse(account).unwrap(),
            currency: Currency::parse(self.pick(&CURRENCIES)).unwrap(),
            amount: PositiveAmount::new(1 + self.rng.below(500) as i64).unwrap(),
            sequence,
            explicit_sequence: false,
            link,
        }
    }

    /// A high-water sequence: the sender's clock (each seed's plan after
    /// the last one's), now and then a few ticks behind one already
    /// applied (late).
    fn sequence(&mut self) -> i64 {
        let now = (self.tag * 1_000 + self.planned.len() as u64) as i64;
        if self.rng.below(6) == 0 {
            now - 1 - self.rng.below(8) as i64
        } else {
            now
        }
    }

    /// A plain credit or debit of a high-water source.
    fn plain(&mut self) -> NormalisedEvent {
        let direction = if self.rng.below(3) == 0 {
            Direction::Debit
        } else {
            Direction::Credit
        };
        let sequence = self.sequence();
        let posting = self.posting(direction, Link::None, sequence);
        self.event(Movement::Post(posting))
    }

    /// A number of `stream` (0: `ledger`, 1: `ledger-small`).
    fn contiguous(&mut self, stream: usize) -> NormalisedEvent {
        let account = self.rng.index(ACCOUNTS.len());
        let next = self.contiguous[stream][account];
        // The next number; or one ahead (parked until the number it skips
        // comes); or a number skipped before (the gap-filler, releasing
        // what waits); or one already taken.
        let gaps = &mut self.gaps[stream][account];
        let sequence = match (self.rng.below(6), gaps.pop()) {
            (0..=2, Some(gap)) => gap,
            (roll, gap) => {
                gaps.extend(gap);
                match roll {
                    3 => {
                        gaps.push(next);
                        next + 1
                    }
                    4 => next - 1,
                    _ => next,
                }
            }
        };
        self.contiguous[stream][account] = next.max(sequence + 1);
        let mut posting = self.posting(Direction::Credit, Link::None, sequence);
        posting.account = AccountId::parse(ACCOUNTS[account]).unwrap();
        posting.explicit_sequence = true;
        self.event(Movement::Post(posting))
    }

    fn payment_credit(&mut self) -> NormalisedEvent {
        // Now and then a payment credited before: `duplicate_effect`.
        let payment = if self.payments > 0 && self.rng.below(4) == 0 {
            1 + self.rng.below(self.payments)
        } else {
            self.payments += 1;
            self.payments
        };
        let sequence = self.sequence();
        let mut posting = self.posting(
            Direction::Credit,
            Link::Pays(format!("pay_{}_{payment}", self.tag)),
            sequence,
        );
        if self.mix == Mix::Payments {
            // As the refunds: a refund that waited for it can apply.
            posting.currency = Currency::parse("USD").unwrap();
        }
        self.event(Movement::Post(posting))
    }

    /// One part of a payment captured in parts: a new one, or the next
    /// part of one seen before (a run decides only the first in memory).
    fn part_credit(&mut self) -> NormalisedEvent {
        let payment = if self.parted > 0 && self.rng.below(3) == 0 {
            1 + self.rng.below(self.parted)
        } else {
            self.parted += 1;
            self.parted
        };
        let sequence = self.sequence();
        let mut posting = self.posting(
            Direction::Credit,
            Link::PaysPart(format!("part_{}_{payment}", self.tag)),
            sequence,
        );
        // Every part to one account, as a capture in parts goes.
        posting.account = AccountId::parse(ACCOUNTS[payment as usize % ACCOUNTS.len()]).unwrap();
        self.event(Movement::Post(posting))
    }

    /// One part of a payment named as the whole credits name theirs: of
    /// one credited whole before (`duplicate_effect`), or of a new one,
    /// which a later whole credit finds credited in parts.
    fn part_of_whole(&mut self) -> NormalisedEvent {
        let mut event = self.payment_credit();
        if let Movement::Post(posting) = &mut event.movement
            && let Link::Pays(payment) = &posting.link
        {
            // Marked, for the test to find what became of it.
            event.object_id = Some(format!("part_of_{payment}"));
            posting.link = Link::PaysPart(payment.clone());
        }
        event
    }

    /// A refund of a payment credited before, or of the next one (which
    /// waits unmatched until it is credited); now and then larger than any
    /// payment, a running total, naming an account (the payment's or
    /// another), in another currency than the payment's, or a
    /// reinstatement of an earlier refund.
    pub(crate) fn refund(&mut self) -> NormalisedEvent {
        let payment = if self.mix == Mix::Payments && self.rng.below(3) == 0 {
            // The next payment: it waits for the credit, which releases it.
            self.payments + 1
        } else {
            1 + self.rng.below(self.payments + 1)
        };
        let amount = if self.rng.below(5) == 0 {
            900
        } else {
            1 + self.rng.below(200) as i64
        };
        let roll = self.rng.below(20);
        let basis = if roll < 4 { Basis::Total } else { Basis::Each };
        let account = (4..6)
            .contains(&roll)
            .then(|| AccountId::parse(self.pick(&ACCOUNTS)).unwrap());
        let currency = if roll == 6 { "EUR" } else { "USD" };
        let undoes = (roll == 7 && !self.refunds.is_empty())
            .then(|| self.refunds[self.rng.index(self.refunds.len())].clone());
        let direction = if undoes.is_some() {
            Direction::Credit
        } else {
            Direction::Debit
        };
        let request = ReverseRequest {
            direction,
            currency: Currency::parse(currency).unwrap(),
            amount: PositiveAmount::new(amount).unwrap(),
            account,
            sequence: self.sequence(),
            reversal: Reversal {
                payment_ref: format!("pay_{}_{payment}", self.tag),
                basis,
                undoes,
            },
        };
        let event = self.event(Movement::Reverse(request));
        if direction == Direction::Debit {
            self.refunds.push(event.event_id.as_str().to_owned());
        }
        event
    }

    fn no_effect(&mut self) -> NormalisedEvent {
        if self.rng.below(2) == 0 {
            return self.event(Movement::None);
        }
        self.event(Movement::Rejected(Rejection {
            reason: "for the test".to_owned(),
            account: None,
            currency: None,
            signed_amount: None,
            sequence: None,
        }))
    }

    /// Adds one delivery.
    fn add(&mut self) {
        // Not in arrival order: a run must keep each row's last time, not
        // its latest.
        let received_at = self.start + Duration::seconds(self.rng.below(3_600) as i64);
        let roll = self.rng.below(100);
        if roll < 12 && !self.planned.is_empty() {
            // A redelivery; a third of them with another body.
            let mut again = self.planned[self.rng.index(self.planned.len())].clone();
            if self.rng.below(3) == 0 {
                again.body.extend_from_slice(b" ");
            }
            again.received_at = received_at;
            self.planned.push(again);
            return;
        }
        let (source, events) = match (self.mix, roll) {
            (Mix::Every, _) => self.every(roll),
            // Payments at `lenient`, whose refunds apply when late: one
            // that waited is late once its payment's credit moves the guard.
            (Mix::Payments, 12..=39) => ("lenient", vec![self.payment_credit()]),
            // Held when late: a run decides those alone, and goes on.
            (Mix::Payments, 40..=51) => ("strict", vec![self.payment_credit()]),
            (Mix::Payments, 52..=56) => ("demo", vec![self.part_credit()]),
            // A part of a payment that `lenient` credits whole as well.
            (Mix::Payments, 57..=61) => ("lenient", vec![self.part_of_whole()]),
            (Mix::Payments, 62..=75) => (
                self.pick(&["demo", "lenient", "strict"]),
                vec![self.plain()],
            ),
            (Mix::Payments, 76..=85) => ("lenient", vec![self.refund()]),
            (Mix::Payments, _) => {
                let n = 2 + self.rng.below(3);
                ("lenient", (0..n).map(|_| self.payment_credit()).collect())
            }
        };
        let body = format!("{{\"delivery\":{}}}", self.planned.len()).into_bytes();
        self.planned.push(Planned {
            source,
            events,
            body,
            received_at,
        });
    }

    /// A new delivery of [`Mix::Every`], by `roll` (12-99).
    fn every(&mut self, roll: u64) -> (&'static str, Vec<NormalisedEvent>) {
        match roll {
            0..=39 => (self.pick(&["demo", "lenient"]), vec![self.plain()]),
            40..=53 => ("ledger", vec![self.contiguous(0)]),
            54..=61 => ("ledger-small", vec![self.contiguous(1)]),
            62..=73 => ("demo", vec![self.payment_credit()]),
            74..=83 => ("demo", vec![self.refund()]),
            84..=89 => ("demo", vec![self.no_effect()]),
            _ => {
                let n = 2 + self.rng.below(3);
                ("demo", (0..n).map(|_| self.plain()).collect())
            }
        }
    }
}

fn sources(app: &TestApp, options: &Options<'_>) -> Vec<Arc<Source>> {
    let text = crate::app_config::base_config(&app.database_url, options);
    let config = hookledger::config::from_toml(&text, &|_| None).expect("the test config loads");
    config.sources.into_iter().map(Arc::new).collect()
}

fn source<'a>(sources: &'a [Arc<Source>], name: &str) -> &'a Arc<Source> {
    sources
        .iter()
        .find(|source| source.name.as_str() == name)
        .expect("a source of the test config")
}

type Delivery<'a> = (Arc<Source>, Vec<NormalisedEvent>, RawDelivery<'a>);

fn deliveries<'a>(
    planned: &'a [Planned],
    digests: &'a [String],
    sources: &[Arc<Source>],
) -> Vec<Delivery<'a>> {
    planned
        .iter()
        .zip(digests)
        .map(|(plan, digest)| {
            let raw = crate::direct::webhook(&plan.body, digest, plan.received_at);
            (
                source(sources, plan.source).clone(),
                plan.events.clone(),
                raw,
            )
        })
        .collect()
}

/// Two destinations (one ordered), so that every posting's messages are
/// compared too; a source that holds debits below zero.
fn options(destinations: &str) -> Options<'_> {
    Options {
        extra_sources: destinations,
        no_relay: true,
        ..Options::default()
    }
}

fn config_text() -> String {
    format!(
        "{}{}{MORE_SOURCES}",
        http_destination("billing", "http://127.0.0.1:9", "ordered_by_account = true"),
        http_destination("crm", "http://127.0.0.1:9", ""),
    )
}

/// One source that holds every late event (`stale`), credits too; two of
/// one scope, where a payment either receives is one payment.
const MORE_SOURCES: &str = r#"
[[sources]]
name = "strict"
kind = "standard-webhooks"
secrets = ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
on_stale = "hold"

[[sources]]
name = "shared-a"
kind = "standard-webhooks"
secrets = ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
scope = "shared"

[[sources]]
name = "shared-b"
kind = "standard-webhooks"
secrets = ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
scope = "shared"
"#;

/// Each table's rows as JSON, in the order the database numbered them
/// (tables with no number of their own: by content), each number replaced
/// by what it names (an intent by its key, a payment by its reference): the
/// two databases may number differently, never in another order.
async fn tables(app: &TestApp) -> Vec<(&'static str, Vec<Value>)> {
    let mut names = HashMap::new();
    let mut all = Vec::new();
    for (table, id, named_as) in [
        ("intents", "intent_id", ["scope", "event_id"]),
        ("payments", "payment_id", ["scope", "payment_ref"]),
        ("ledger_entries", "entry_id", ["", ""]),
        ("outbox", "outbox_id", ["", ""]),
        ("balances", "", ["", ""]),
        ("sequence_guards", "", ["", ""]),
    ] {
        let mut rows = crate::table_rows::table_json(app, table, None).await;
        rows.sort_by_key(|row| (row[id].as_i64(), row.to_string()));
        for row in &mut rows {
            let object = row.as_object_mut().unwrap();
            // An entry's links cover its intent's and payment's numbers,
            // which the two number differently: each database's chains
            // are verified instead (`same_tables`).
            object.remove("prev_hash");
            object.remove("entry_hash");
            let number = object.remove(id).and_then(|n| n.as_i64());
            if let Some(number) = number.filter(|_| !named_as[0].is_empty()) {
                let name = format!("{}/{}", object[named_as[0]], object[named_as[1]]);
                names.insert((table, number), name);
            }
            for (column, names_a) in [
                ("intent_id", "intents"),
                ("credited_by", "intents"),
                ("replayed_into", "intents"),
                ("credits_payment", "payments"),
            ] {
                if let Some(number) = object.get(column).and_then(Value::as_i64) {
                    let name = names.get(&(names_a, number)).cloned();
                    object.insert(column.to_owned(), Value::from(name));
                }
            }
        }
        all.push((table, rows));
    }
    all
}

/// Two apps of the same config, one for groups and one for deliveries
/// one by one, and the config's sources.
pub(crate) async fn two_apps(backend: Backend) -> (TestApp, TestApp, Vec<Arc<Source>>) {
    let destinations = config_text();
    let options = options(&destinations);
    let together = TestApp::spawn_with(backend.clone(), options_again(&options)).await;
    let alone = TestApp::spawn_with(backend, options_again(&options)).await;
    let sources = sources(&together, &options);
    (together, alone, sources)
}

/// Asserts that every table of `together` holds what `alone`'s does.
async fn same_tables(together: &TestApp, alone: &TestApp, context: &str) {
    for app in [together, alone] {
        let chains = app.store().verify_chains().await.unwrap();
        assert!(chains.is_clean(), "{context}: {chains:#?}");
    }
    let (group_tables, alone_tables) = (tables(together).await, tables(alone).await);
    for ((table, group), (_, one)) in group_tables.iter().zip(&alone_tables) {
        assert_eq!(group.len(), one.len(), "{context}, {table}");
        for (group, one) in group.iter().zip(one) {
            assert_eq!(group, one, "{context}, {table}");
        }
    }
}

/// Random groups of `mix` from four seeds, each group committed together
/// in one database and one by one in another: the same answers, the same
/// tables after every group. Every outcome, and the app that committed
/// groups, for the caller to check that the plans covered what it claims.
async fn decides_as_one_by_one(backend: Backend, mix: Mix) -> (Vec<Outcome>, TestApp) {
    let (together, alone, sources) = two_apps(backend).await;
    let mut seen = Vec::new();
    for seed in 1..=4u64 {
        let mut plan = Plan::new(seed * 7919, mix);
        for _ in 0..80 {
            plan.add();
        }
        let digests: Vec<String> = plan.planned.iter().map(|p| sha256_hex(&p.body)).collect();
        let all = deliveries(&plan.planned, &digests, &sources);
        let mut grouped = Vec::new();
        let mut rng = SplitMix64::new(seed);
        let mut rest = &all[..];
        while !rest.is_empty() {
            let size = (1 + rng.index(30)).min(rest.len());
            let (group, after) = rest.split_at(size);
            let (together_answers, counts) = commit_together_counted(together.store(), group).await;
            // Decided in memory as the rows say: no write of a run broke
            // a key and ran again.
            assert_eq!(
                counts.set_based_failures, 0,
                "seed {seed}: a set-based statement failed"
            );
            for ((source, events, raw), answer) in group.iter().zip(&together_answers) {
                let alone_answer = ingest_direct(alone.store(), source, events, raw).await;
                let at = grouped.len();
                match (answer, &alone_answer) {
                    (Ok(group), Ok(one)) => assert_eq!(group, one, "seed {seed}, delivery {at}"),
                    _ => panic!("seed {seed}, delivery {at}: {answer:?} / {alone_answer:?}"),
                }
                grouped.push(alone_answer);
            }
            // After every group, not only at the end: a later write to a
            // row could hide a wrong one.
            same_tables(&together, &alone, &format!("seed {seed}")).await;
            rest = after;
        }
        seen.extend(grouped.into_iter().flat_map(Result::unwrap));
        together.assert_invariants().await;
        alone.assert_invariants().await;
    }
    (seen, together)
}

async fn a_group_decides_as_one_by_one(backend: Backend) {
    let (seen, _) = decides_as_one_by_one(backend, Mix::Every).await;
    // The plans covered what the test claims: every kind of decision, as
    // answered.
    let statuses: Vec<&str> = seen.iter().map(|o| o.status.as_str()).collect();
    for status in [
        "applied",
        "stale",
        "waiting",
        "unmatched",
        "duplicate_effect",
        "rejected",
        "ignored",
    ] {
        assert!(statuses.contains(&status), "no {status} in {statuses:?}");
    }
    assert!(seen.iter().any(|o| o.duplicate), "no redelivery");
    assert!(seen.iter().any(|o| o.conflict), "no conflict");
    assert!(seen.iter().any(|o| o.late), "no late event");
    assert!(seen.iter().any(|o| o.released > 0), "no release");
}

async fn a_run_of_payments_decides_as_one_by_one(backend: Backend) {
    let (seen, together) = decides_as_one_by_one(backend, Mix::Payments).await;
    let statuses: Vec<&str> = seen.iter().map(|o| o.status.as_str()).collect();
    for status in [
        "applied",
        "unmatched",
        "duplicate_effect",
        "rejected",
        "stale",
    ] {
        assert!(statuses.contains(&status), "no {status} in {statuses:?}");
    }
    assert!(seen.iter().any(|o| o.duplicate), "no redelivery");
    assert!(
        seen.iter()
            .any(|o| o.late && o.status.as_str() == "applied"),
        "no late credit applied"
    );
    assert!(seen.iter().any(|o| o.released > 0), "no release");
    let intents = crate::table_rows::table_json(&together, "intents", None).await;
    let with = |status: &str, source: &str, object: &str, reason: &str| {
        intents.iter().any(|row| {
            row["status"] == status
                && row["source"] == source
                && row["object_id"]
                    .as_str()
                    .is_some_and(|o| o.starts_with(object))
                && row["reason"].as_str().is_some_and(|r| r.contains(reason))
        })
    };
    // A late credit held inside a run of payments, and a part and a whole
    // of one payment, each way round.
    assert!(
        with("stale", "strict", "", "sequence"),
        "no late credit held"
    );
    assert!(
        with(
            "duplicate_effect",
            "lenient",
            "obj_",
            "credited in parts already"
        ),
        "no whole credit after a part"
    );
    assert!(
        with("duplicate_effect", "lenient", "part_of_", "was credited by"),
        "no part after a whole credit"
    );
}

/// `first` ingested one by one into both apps, each event answered
/// `unmatched` (a refund that waits for its payment).
async fn refunds_waiting(apps: [&TestApp; 2], sources: &[Arc<Source>], first: &[Planned]) {
    one_by_one_as(apps, sources, first, "unmatched").await;
}

/// `sql` run on both apps: a state no API makes, rigged alike in each.
pub(crate) async fn on_both(apps: [&TestApp; 2], sql: &'static str) {
    for app in apps {
        app.execute_sql(sql).await.unwrap();
    }
}

/// `first` ingested one by one into both apps, each event answered
/// `status`.
pub(crate) async fn one_by_one_as(
    apps: [&TestApp; 2],
    sources: &[Arc<Source>],
    first: &[Planned],
    status: &str,
) {
    let digests: Vec<String> = first.iter().map(|p| sha256_hex(&p.body)).collect();
    for app in apps {
        for (source, events, raw) in deliveries(first, &digests, sources) {
            let answer = ingest_direct(app.store(), &source, &events, &raw).await;
            assert_eq!(answer.unwrap()[0].status.as_str(), status);
        }
    }
}

/// `group` committed together into `together` and one by one into
/// `alone`: the same answer for each delivery, and the same tables after.
/// Every outcome, in order.
pub(crate) async fn group_as_one_by_one(
    pair: (&TestApp, &TestApp),
    sources: &[Arc<Source>],
    group: &[Planned],
    context: &str,
) -> Vec<Outcome> {
    group_as_one_by_one_counted(pair, sources, group, context)
        .await
        .0
}

/// [`group_as_one_by_one`], and how many events the group's runs decided
/// in memory.
pub(crate) async fn group_as_one_by_one_counted(
    (together, alone): (&TestApp, &TestApp),
    sources: &[Arc<Source>],
    group: &[Planned],
    context: &str,
) -> (Vec<Outcome>, usize) {
    let digests: Vec<String> = group.iter().map(|p| sha256_hex(&p.body)).collect();
    let all = deliveries(group, &digests, sources);
    let (answers, counts) = commit_together_counted(together.store(), &all).await;
    assert_eq!(
        counts.set_based_failures, 0,
        "{context}: a set-based statement failed"
    );
    let mut seen = Vec::new();
    for ((source, events, raw), answer) in all.iter().zip(answers) {
        let one = ingest_direct(alone.store(), source, events, raw)
            .await
            .unwrap();
        assert_eq!(answer.unwrap(), one, "{context}");
        seen.extend(one);
    }
    same_tables(together, alone, context).await;
    (seen, counts.decided_in_memory)
}

/// A refund waits `unmatched` in a scope that holds no row of its payment
/// (as a re-scope can leave one: the row stays with intents in the old
/// scope): the run that credits the payment creates the row, and must
/// still release the refund, as the credit decided alone does.
async fn a_run_releases_a_refund_that_waits_without_a_row(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let mut plan = Plan::new(3, Mix::Payments);
    let mut refund = plan.refund();
    if let Movement::Reverse(request) = &mut refund.movement {
        request.reversal.payment_ref = "pay_waits".to_owned();
        request.sequence = 1;
    }
    let credits: Vec<NormalisedEvent> = (0..3)
        .map(|n| {
            let link = match n {
                1 => Link::Pays("pay_waits".to_owned()),
                _ => Link::None,
            };
            let mut posting = plan.posting(Direction::Credit, link, 10 + n);
            posting.currency = Currency::parse("USD").unwrap();
            posting.amount = PositiveAmount::new(1_000).unwrap();
            plan.event(Movement::Post(posting))
        })
        .collect();
    let delivery = |events: Vec<NormalisedEvent>, n: i64| Planned {
        source: "lenient",
        events,
        body: format!("{{\"waits\":{n}}}").into_bytes(),
        received_at: plan.start + Duration::seconds(n),
    };
    let refund = [delivery(vec![refund], 0)];
    let credits: Vec<Planned> = credits
        .into_iter()
        .zip(1..)
        .map(|(credit, n)| delivery(vec![credit], n))
        .collect();
    refunds_waiting([&together, &alone], &sources, &refund).await;
    on_both([&together, &alone], "delete from payments").await;
    let pair = (&together, &alone);
    group_as_one_by_one(pair, &sources, &credits, "a refund waiting without a row").await;
    let intents = crate::table_rows::table_json(&together, "intents", None).await;
    let refund = intents
        .iter()
        .find(|row| row["reversal"] == "each")
        .expect("the refund's intent");
    assert_eq!(refund["status"], "applied", "{refund}");
    together.assert_invariants().await;
}

/// A refund `shared-b` received waits for its payment; then one group
/// holds `shared-a`'s credit of that payment and, after it, a credit
/// `shared-b` received for the same account, numbered below the refund.
/// One by one the credit releases the refund, which moves `shared-b`'s
/// guard past the later credit: that one is late. A group must give the
/// same (a run would not see the guard the release moved).
async fn a_release_to_another_source_of_the_scope_decides_as_one_by_one(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let mut plan = Plan::new(5, Mix::Payments);
    let account = AccountId::parse("acct_shared").unwrap();
    let mut refund = plan.refund();
    if let Movement::Reverse(request) = &mut refund.movement {
        request.reversal.payment_ref = "pay_shared".to_owned();
        request.amount = PositiveAmount::new(50).unwrap();
        request.sequence = 100;
    }
    let mut posting = |link: Link, sequence: i64| {
        let mut posting = plan.posting(Direction::Credit, link, sequence);
        posting.account = account.clone();
        posting.currency = Currency::parse("USD").unwrap();
        posting.amount = PositiveAmount::new(500).unwrap();
        plan.event(Movement::Post(posting))
    };
    let credit = posting(Link::Pays("pay_shared".to_owned()), 10);
    let below = posting(Link::None, 60);
    let after = posting(Link::None, 120);
    let at = plan.start;
    let delivery = |source: &'static str, event: NormalisedEvent, n: i64| Planned {
        source,
        events: vec![event],
        body: format!("{{\"shared\":{n}}}").into_bytes(),
        received_at: at + Duration::seconds(n),
    };
    let first = [delivery("shared-b", refund, 0)];
    let group = [
        delivery("shared-a", credit, 1),
        delivery("shared-b", below, 2),
        delivery("shared-b", after, 3),
    ];
    refunds_waiting([&together, &alone], &sources, &first).await;
    let pair = (&together, &alone);
    let seen = group_as_one_by_one(pair, &sources, &group, "a release to another source").await;
    assert_eq!(seen[0].released, 1, "{seen:?}");
    assert!(seen[1].late, "{seen:?}");
    together.assert_invariants().await;
}

fn options_again<'a>(options: &Options<'a>) -> Options<'a> {
    Options {
        extra_sources: options.extra_sources,
        no_relay: options.no_relay,
        ..Options::default()
    }
}

/// The largest balance there is, 2^62 minor units (`settle`).
const BALANCE_LIMIT: i64 = 1 << 62;

/// A run of plain postings that reaches the ±2^62 limit stops there: the
/// credit that would pass it is refused as one by one refuses it, and the
/// run goes on after it from the balance as it stands. 4,611 credits of
/// the largest amount, in batches of 100, come within 686,018,427,387,904
/// of the limit; then one more of the largest (refused), exactly the room
/// left (applied: the limit itself is in range), one unit (refused), a
/// debit and a credit (both applied). All in one group.
async fn a_run_stops_at_the_balance_limit(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let largest = hookledger::domain::MAX_AMOUNT_MINOR;
    let mut plan = Plan::new(1, Mix::Every);
    let mut amounts: Vec<(Direction, i64)> = vec![(Direction::Credit, largest); 4_611];
    let room = BALANCE_LIMIT - 4_611 * largest;
    amounts.extend([
        (Direction::Credit, largest),
        (Direction::Credit, room),
        (Direction::Credit, 1),
        (Direction::Debit, 5),
        (Direction::Credit, 5),
    ]);
    let events: Vec<NormalisedEvent> = amounts
        .iter()
        .enumerate()
        .map(|(sequence, &(direction, amount))| {
            let posting = Posting {
                direction,
                account: AccountId::parse("acct_limit").unwrap(),
                currency: Currency::parse("USD").unwrap(),
                amount: PositiveAmount::new(amount).unwrap(),
                sequence: sequence as i64,
                explicit_sequence: false,
                link: Link::None,
            };
            plan.event(Movement::Post(posting))
        })
        .collect();
    let planned: Vec<Planned> = events
        .chunks(100)
        .enumerate()
        .map(|(n, events)| Planned {
            source: "demo",
            events: events.to_vec(),
            body: format!("{{\"limit\":{n}}}").into_bytes(),
            received_at: plan.start + Duration::seconds(n as i64),
        })
        .collect();
    let digests: Vec<String> = planned.iter().map(|p| sha256_hex(&p.body)).collect();
    let all = deliveries(&planned, &digests, &sources);
    let (answers, counts) = commit_together_counted(together.store(), &all).await;
    // Refused in memory, as one by one refuses it: no statement broke.
    assert_eq!(counts.set_based_failures, 0, "a set-based statement failed");
    let mut statuses = Vec::new();
    for ((source, events, raw), answer) in all.iter().zip(answers) {
        let one = ingest_direct(alone.store(), source, events, raw).await;
        let (group, one) = (answer.unwrap(), one.unwrap());
        assert_eq!(group, one);
        statuses.extend(
            group
                .iter()
                .map(|outcome| outcome.status.as_str().to_owned()),
        );
    }
    let refused: Vec<usize> = (0..statuses.len())
        .filter(|&n| statuses[n] != "applied")
        .collect();
    assert_eq!(refused, [4_611, 4_613], "{:?}", &statuses[4_600..]);
    assert_eq!(statuses[4_611], "rejected");
    same_tables(&together, &alone, "at the limit").await;
    let balances = crate::table_rows::table_json(&together, "balances", None).await;
    let limit: Vec<i64> = balances
        .iter()
        .filter(|row| row["account_id"] == "acct_limit")
        .map(|row| row["balance_minor"].as_i64().unwrap())
        .collect();
    assert_eq!(limit, [BALANCE_LIMIT]);
    together.assert_invariants().await;
    alone.assert_invariants().await;
}

crate::both_backends!(
    a_group_decides_as_one_by_one,
    a_run_of_payments_decides_as_one_by_one,
    a_run_releases_a_refund_that_waits_without_a_row,
    a_release_to_another_source_of_the_scope_decides_as_one_by_one,
    a_run_stops_at_the_balance_limit
);
