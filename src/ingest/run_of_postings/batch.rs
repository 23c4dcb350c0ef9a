//! The writes of the events a run decided in memory since its last flush,
//! and the statements that write them.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::store::{
    RowKey, RunBalance, RunCredit, RunGuard, RunLate, RunMatch, RunPosting, RunReversed,
    StoreError, WriteTx,
};

#[derive(Default)]
pub(super) struct Batch<'i> {
    /// Each event applied: its item, and whether it was late.
    pub applied: Vec<(usize, bool)>,
    pub postings: Vec<RunPosting<'i>>,
    /// The balance after the last posting, the count, its time.
    pub balances: HashMap<RowKey, (i64, i64, DateTime<Utc>)>,
    pub guards: HashMap<RowKey, (i64, DateTime<Utc>)>,
    /// The late events' intents, to mark.
    pub late: Vec<RunLate>,
    /// The payments credited, each on the row the run created for it.
    pub credits: Vec<RunCredit<'i>>,
    /// The reversals applied: their intents matched, and what they took
    /// from each payment (by `payment_id`), in all.
    pub matches: Vec<RunMatch<'i>>,
    pub reversed: HashMap<i64, (i64, DateTime<Utc>)>,
}

impl<'i> Batch<'i> {
    /// A reversal applied: intent `intent_id` to `account`, `amount`
    /// (negative) taken from payment `payment_id`.
    pub(super) fn reversal(
        &mut self,
        intent_id: i64,
        account: &'i str,
        payment_id: i64,
        amount: i64,
        now: DateTime<Utc>,
    ) {
        self.matches.push(RunMatch {
            intent_id,
            account_id: account,
            amount_minor: amount,
        });
        let taken = self.reversed.entry(payment_id).or_insert((0, now));
        *taken = (taken.0 - amount, now);
    }

    pub(super) async fn write(&self, tx: &mut WriteTx) -> Result<(), StoreError> {
        if self.postings.is_empty() {
            return Ok(());
        }
        let balances: Vec<_> = self
            .balances
            .iter()
            .map(
                |((account, currency), &(balance, postings, now))| RunBalance {
                    account_id: account,
                    currency,
                    balance_minor: balance,
                    postings,
                    updated_at: now,
                },
            )
            .collect();
        let guards: Vec<_> = self
            .guards
            .iter()
            .map(|((source, account), &(sequence, now))| RunGuard {
                source,
                account_id: account,
                last_sequence: sequence,
                updated_at: now,
            })
            .collect();
        tx.write_run(&self.postings, &balances, &guards, &[])
            .await?;
        // After the credits: a reversal may take from a payment the batch
        // credits.
        tx.credit_run_payments(&self.credits).await?;
        let reversed: Vec<_> = self
            .reversed
            .iter()
            .map(|(&payment_id, &(taken_minor, updated_at))| RunReversed {
                payment_id,
                taken_minor,
                updated_at,
            })
            .collect();
        tx.write_run_reversals(&self.matches, &reversed).await?;
        tx.mark_run_late(&self.late).await
    }
}
