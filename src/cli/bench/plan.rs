//! What a bench phase sends: pre-signed deliveries, each a credit to one of
//! the run's accounts, and the sums they add up to.

use std::collections::HashMap;

use crate::cli::sign::{SignedRequest, signed_sample};
use crate::providers::Sample;
pub use crate::rng::SplitMix64 as Rng;
use crate::secret::Secret;

/// One pre-signed delivery and what it should do.
#[derive(Debug, Clone)]
pub struct Planned {
    pub signed: SignedRequest,
    pub account: usize,
    pub amount_minor: i64,
    /// A redelivery of an event already answered 200.
    pub duplicate: bool,
}

/// How a phase's deliveries are made.
#[derive(Debug, Clone, Copy)]
pub struct Profile {
    /// Share (percent) that are redeliveries of accepted events.
    pub duplicates: u32,
    /// Share (percent) of new events sent below their account's newest
    /// sequence (late credits apply under high-water ordering).
    pub late: u32,
}

pub const NEW: Profile = Profile {
    duplicates: 0,
    late: 0,
};
pub const DUPLICATES: Profile = Profile {
    duplicates: 100,
    late: 0,
};
pub const MIXED: Profile = Profile {
    duplicates: 30,
    late: 20,
};

/// The run's accounts, their sequence counters and what was accepted.
pub struct Ledger {
    pub run: String,
    pub kind: String,
    secret: Secret,
    accounts: usize,
    /// Per account, the newest in-order sequence sent (even numbers; a late
    /// event takes the odd number below, once; every number, and no late
    /// one, when `numbered`).
    sequence: Vec<i64>,
    late_used: Vec<i64>,
    /// Each new credit is a payment's, with an id of its own.
    payments: bool,
    /// Each account's credits are numbered 1, 2, 3, ... (none late).
    numbered: bool,
    /// Share (percent) of new events that are refunds of payments planned
    /// before them.
    refunds: u32,
    /// Payments planned and not refunded yet: (payment, account, amount).
    refundable: Vec<(String, usize, i64)>,
    /// Every event answered 200 (new ones), for redeliveries.
    pub accepted: Vec<Planned>,
    /// Per account, the sum of the accepted credits.
    pub expected: HashMap<usize, i64>,
    next_id: u64,
}

impl Ledger {
    pub fn new(run: String, kind: String, secret: Secret, accounts: usize) -> Self {
        Self {
            run,
            kind,
            secret,
            accounts,
            sequence: vec![0; accounts],
            late_used: vec![0; accounts],
            payments: false,
            numbered: false,
            refunds: 0,
            refundable: Vec::new(),
            accepted: Vec::new(),
            expected: HashMap::new(),
            next_id: 0,
        }
    }

    /// With `payments`, each new credit names a payment of its own.
    pub fn paying(self, payments: bool) -> Self {
        Self { payments, ..self }
    }

    /// With `refunds` (percent, with `paying`), that share of new events
    /// are refunds, each of a payment planned before it, once.
    pub fn refunding(self, refunds: u32) -> Self {
        Self { refunds, ..self }
    }

    /// With `numbered`, each account's credits are numbered 1, 2, 3, ...
    /// in the order they are planned, and none is late.
    pub fn numbering(self, numbered: bool) -> Self {
        Self { numbered, ..self }
    }

    pub fn account_id(&self, account: usize) -> String {
        format!("bench-{}-{account}", self.run)
    }

    pub fn accounts(&self) -> usize {
        self.accounts
    }

    /// `count` deliveries in the profile's mix, signed now; redeliveries
    /// are of events accepted from the `since`-th on.
    pub fn plan(
        &mut self,
        rng: &mut Rng,
        profile: Profile,
        count: usize,
        since: usize,
    ) -> Result<Vec<Planned>, String> {
        let timestamp = chrono::Utc::now().timestamp();
        let mut planned = Vec::with_capacity(count);
        for _ in 0..count {
            let roll = rng.below(100) as u32;
            if roll < profile.duplicates && self.accepted.len() > since {
                let pick = since + rng.below((self.accepted.len() - since) as u64) as usize;
                let mut again = self.accepted[pick].clone();
                again.duplicate = true;
                planned.push(again);
                continue;
            }
            if self.refunds > 0
                && !self.refundable.is_empty()
                && (rng.below(100) as u32) < self.refunds
            {
                planned.push(self.refund(rng, timestamp)?);
                continue;
            }
            let account = rng.below(self.accounts as u64) as usize;
            let late = !self.numbered
                && roll < profile.duplicates + profile.late
                && self.sequence[account] >= 2
                && self.late_used[account] < self.sequence[account] - 1;
            let sequence = if late {
                self.late_used[account] = self.sequence[account] - 1;
                self.sequence[account] - 1
            } else {
                self.sequence[account] += if self.numbered { 1 } else { 2 };
                self.sequence[account]
            };
            self.next_id += 1;
            let amount_minor = 1 + rng.below(10_000) as i64;
            let payment = self
                .payments
                .then(|| format!("pay-{}-{}", self.run, self.next_id));
            if let Some(payment) = payment.as_ref().filter(|_| self.refunds > 0) {
                self.refundable
                    .push((payment.clone(), account, amount_minor));
            }
            let sample = Sample {
                event_id: format!("bench-{}-{}", self.run, self.next_id),
                event_type: None,
                account_id: self.account_id(account),
                amount_minor,
                currency: "USD".to_owned(),
                sequence: Some(sequence),
                timestamp,
                payment,
            };
            planned.push(Planned {
                signed: signed_sample(&self.kind, &self.secret, &sample)?,
                account,
                amount_minor,
                duplicate: false,
            });
        }
        Ok(planned)
    }

    /// A refund of a payment planned before (and not refunded yet), for
    /// part or all of it, at its account's next sequence.
    fn refund(&mut self, rng: &mut Rng, timestamp: i64) -> Result<Planned, String> {
        let pick = rng.below(self.refundable.len() as u64) as usize;
        let (payment, account, paid) = self.refundable.swap_remove(pick);
        let amount_minor = 1 + rng.below(paid as u64) as i64;
        self.sequence[account] += 2;
        self.next_id += 1;
        let sample = Sample {
            event_id: format!("bench-{}-{}", self.run, self.next_id),
            event_type: Some("balance.debit".to_owned()),
            account_id: self.account_id(account),
            amount_minor,
            currency: "USD".to_owned(),
            sequence: Some(self.sequence[account]),
            timestamp,
            payment: Some(payment),
        };
        Ok(Planned {
            signed: signed_sample(&self.kind, &self.secret, &sample)?,
            account,
            amount_minor: -amount_minor,
            duplicate: false,
        })
    }

    /// Records a new event the receiver answered 200.
    pub fn accept(&mut self, planned: &Planned) {
        if planned.duplicate {
            return;
        }
        *self.expected.entry(planned.account).or_default() += planned.amount_minor;
        self.accepted.push(planned.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger() -> Ledger {
        let secret = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        Ledger::new("t".into(), "standard-webhooks".into(), secret, 3)
    }

    #[test]
    fn a_mixed_plan_has_duplicates_late_events_and_unique_ids() {
        let mut ledger = ledger();
        let mut rng = Rng::new(7);
        for planned in ledger.plan(&mut rng, NEW, 30, 0).unwrap() {
            ledger.accept(&planned);
        }
        let mixed = ledger.plan(&mut rng, MIXED, 1_000, 0).unwrap();
        let duplicates = mixed.iter().filter(|p| p.duplicate).count();
        assert!((200..400).contains(&duplicates), "{duplicates}");
        let bodies: Vec<serde_json::Value> = mixed
            .iter()
            .filter(|p| !p.duplicate)
            .map(|p| serde_json::from_slice(&p.signed.body).unwrap())
            .collect();
        let odd = bodies
            .iter()
            .filter(|b| b["data"]["sequence"].as_i64().unwrap() % 2 == 1)
            .count();
        assert!(odd > 0, "no late event");
        let mut ids: Vec<&str> = mixed
            .iter()
            .filter(|p| !p.duplicate)
            .map(|p| {
                let header = p.signed.headers.iter().find(|(n, _)| *n == "webhook-id");
                header.unwrap().1.as_str()
            })
            .collect();
        let all = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), all, "an event id repeats among new events");
    }

    #[test]
    fn a_refunding_plan_refunds_each_payment_once_within_what_it_paid() {
        let mut ledger = ledger().paying(true).refunding(30);
        let mut rng = Rng::new(5);
        let planned = ledger.plan(&mut rng, NEW, 1_000, 0).unwrap();
        let mut paid: HashMap<String, i64> = HashMap::new();
        let mut refunded: HashMap<String, i64> = HashMap::new();
        for one in &planned {
            let body: serde_json::Value = serde_json::from_slice(&one.signed.body).unwrap();
            let payment = body["data"]["payment_id"].as_str().unwrap().to_owned();
            let amount = body["data"]["amount_minor"].as_i64().unwrap();
            if body["type"] == "balance.debit" {
                assert_eq!(one.amount_minor, -amount);
                assert!(paid.get(&payment).is_some_and(|&p| amount <= p), "{body}");
                assert!(refunded.insert(payment, amount).is_none(), "refunded twice");
            } else {
                assert_eq!(one.amount_minor, amount);
                paid.insert(payment, amount);
            }
        }
        assert!((200..400).contains(&refunded.len()), "{}", refunded.len());
    }

    #[test]
    fn a_numbered_plan_numbers_each_account_from_one_with_none_late() {
        let mut ledger = ledger().numbering(true);
        let mut rng = Rng::new(3);
        let mixed = ledger.plan(&mut rng, MIXED, 300, 0).unwrap();
        let mut last: HashMap<String, i64> = HashMap::new();
        for planned in mixed.iter().filter(|p| !p.duplicate) {
            let body: serde_json::Value = serde_json::from_slice(&planned.signed.body).unwrap();
            let account = body["data"]["account_id"].as_str().unwrap().to_owned();
            let sequence = body["data"]["sequence"].as_i64().unwrap();
            let before = last.insert(account, sequence).unwrap_or(0);
            assert_eq!(sequence, before + 1, "{body}");
        }
        assert_eq!(last.len(), 3, "every account numbered");
    }

    #[test]
    fn only_new_accepted_events_count_towards_the_sums() {
        let mut ledger = ledger();
        let mut rng = Rng::new(1);
        let planned = ledger.plan(&mut rng, NEW, 5, 0).unwrap();
        for p in &planned {
            ledger.accept(p);
            let mut again = p.clone();
            again.duplicate = true;
            ledger.accept(&again);
        }
        let total: i64 = ledger.expected.values().sum();
        assert_eq!(total, planned.iter().map(|p| p.amount_minor).sum::<i64>());
        assert_eq!(ledger.accepted.len(), 5);
    }
}
