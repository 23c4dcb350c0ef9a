//! A group of deliveries committed together (the writer's way: runs of
//! plain postings decided in memory and written set-based, every other
//! event alone) gives exactly what the same deliveries give one by one, in
//! the same order: the same answer for each, and the same rows in every
//! table. Random groups of every kind of decision at once, from seeds
//! printed on failure: new, a redelivery of an event earlier in the group
//! (and one with another body), late credits and debits, a debit held by
//! `negative_balance`, contiguous numbers parked and then released by the
//! gap-filler, a payment credited twice (`duplicate_effect`), a refund
//! before its payment (unmatched, released by the credit) and after it,
//! a refund larger than the payment, batches, events with no effect.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use hookledger::domain::{
    AccountId, Basis, Currency, Direction, EventId, Link, Movement, NormalisedEvent, Origin,
    PositiveAmount, Posting, Rejection, Reversal, ReverseRequest,
};
use hookledger::ingest::{RawDelivery, commit_together, ingest_direct};
use hookledger::receive::sha256_hex;
use hookledger::rng::SplitMix64;
use hookledger::source::Source;
use serde_json::Value;

use crate::helpers::{Backend, Options, TestApp};
use crate::outbox::http_destination;

/// A delivery as the test holds it: the source's name, its events, its body.
#[derive(Clone)]
struct Planned {
    source: &'static str,
    events: Vec<NormalisedEvent>,
    body: Vec<u8>,
    received_at: DateTime<Utc>,
}

const ACCOUNTS: [&str; 3] = ["acct_a", "acct_b", "acct_c"];
const CURRENCIES: [&str; 2] = ["USD", "EUR"];

/// Random deliveries from `seed`.
struct Plan {
    rng: SplitMix64,
    planned: Vec<Planned>,
    /// The next contiguous number per account of the `ledger` source.
    contiguous: [i64; 3],
    /// Numbers skipped so far per account, for a later gap-filler.
    gaps: [Vec<i64>; 3],
    payments: u64,
    events: u64,
    start: DateTime<Utc>,
}

impl Plan {
    fn new(seed: u64) -> Self {
        Plan {
            rng: SplitMix64::new(seed),
            planned: Vec::new(),
            contiguous: [1; 3],
            gaps: Default::default(),
            payments: 0,
            events: 0,
            start: Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).unwrap(),
        }
    }

    fn pick<T: Copy>(&mut self, of: &[T]) -> T {
        of[self.rng.index(of.len())]
    }

    fn event_id(&mut self) -> EventId {
        self.events += 1;
        EventId::parse(&format!("evt_{}", self.events)).unwrap()
    }

    fn event(&mut self, movement: Movement) -> NormalisedEvent {
        NormalisedEvent {
            event_id: self.event_id(),
            event_type: "balance.change".to_owned(),
            object_id: Some(format!("obj_{}", self.events)),
            occurred_at: Some(self.start),
            movement,
            payload: None,
        }
    }

    fn posting(&mut self, direction: Direction, link: Link, sequence: i64) -> Posting {
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

    /// A high-water sequence: the sender's clock, now and then a few
    /// ticks behind one already applied (late).
    fn sequence(&mut self) -> i64 {
        let now = self.planned.len() as i64;
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

    fn contiguous(&mut self) -> NormalisedEvent {
        let account = self.rng.index(ACCOUNTS.len());
        let next = self.contiguous[account];
        // The next number; or one ahead (parked until the number it skips
        // comes); or a number skipped before (the gap-filler, releasing
        // what waits); or one already taken.
        let sequence = match (self.rng.below(6), self.gaps[account].pop()) {
            (0..=2, Some(gap)) => gap,
            (roll, gap) => {
                self.gaps[account].extend(gap);
                match roll {
                    3 => {
                        self.gaps[account].push(next);
                        next + 1
                    }
                    4 => next - 1,
                    _ => next,
                }
            }
        };
        self.contiguous[account] = next.max(sequence + 1);
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
        let posting = self.posting(
            Direction::Credit,
            Link::Pays(format!("pay_{payment}")),
            sequence,
        );
        self.event(Movement::Post(posting))
    }

    /// A refund of a payment credited before, or of the next one (which
    /// waits unmatched until it is credited); now and then larger than any
    /// payment.
    fn refund(&mut self) -> NormalisedEvent {
        let payment = 1 + self.rng.below(self.payments + 1);
        let amount = if self.rng.below(5) == 0 {
            900
        } else {
            1 + self.rng.below(200) as i64
        };
        let request = ReverseRequest {
            direction: Direction::Debit,
            currency: Currency::parse("USD").unwrap(),
            amount: PositiveAmount::new(amount).unwrap(),
            account: None,
            sequence: self.sequence(),
            reversal: Reversal {
                payment_ref: format!("pay_{payment}"),
                basis: Basis::Each,
                undoes: None,
            },
        };
        self.event(Movement::Reverse(request))
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
        let (source, events) = match roll {
            0..=39 => (self.pick(&["demo", "lenient"]), vec![self.plain()]),
            40..=61 => ("ledger", vec![self.contiguous()]),
            62..=73 => ("demo", vec![self.payment_credit()]),
            74..=83 => ("demo", vec![self.refund()]),
            84..=89 => ("demo", vec![self.no_effect()]),
            _ => {
                let n = 2 + self.rng.below(3);
                ("demo", (0..n).map(|_| self.plain()).collect())
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
            let raw = RawDelivery {
                payload: &plan.body,
                payload_sha256: digest,
                received_at: plan.received_at,
                signature_headers: None,
                signed_at: None,
                signed_event_id: None,
                origin: Origin::Webhook,
            };
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
        "{}{}",
        http_destination("billing", "http://127.0.0.1:9", "ordered_by_account = true"),
        http_destination("crm", "http://127.0.0.1:9", ""),
    )
}

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
async fn two_apps(backend: Backend) -> (TestApp, TestApp, Vec<Arc<Source>>) {
    let destinations = config_text();
    let options = options(&destinations);
    let together = TestApp::spawn_with(backend.clone(), options_again(&options)).await;
    let alone = TestApp::spawn_with(backend, options_again(&options)).await;
    let sources = sources(&together, &options);
    (together, alone, sources)
}

/// Asserts that every table of `together` holds what `alone`'s does.
async fn same_tables(together: &TestApp, alone: &TestApp, context: &str) {
    let (group_tables, alone_tables) = (tables(together).await, tables(alone).await);
    for ((table, group), (_, one)) in group_tables.iter().zip(&alone_tables) {
        assert_eq!(group.len(), one.len(), "{context}, {table}");
        for (group, one) in group.iter().zip(one) {
            assert_eq!(group, one, "{context}, {table}");
        }
    }
}

async fn a_group_decides_as_one_by_one(backend: Backend) {
    let (together, alone, sources) = two_apps(backend).await;
    let mut seen = Vec::new();
    for seed in 1..=4u64 {
        let mut plan = Plan::new(seed * 7919);
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
            let together_answers = commit_together(together.store(), group).await;
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
    let mut plan = Plan::new(1);
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
    let answers = commit_together(together.store(), &all).await;
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
    a_run_stops_at_the_balance_limit
);
