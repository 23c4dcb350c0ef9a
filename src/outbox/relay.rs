//! One destination's relay: claim what is due, send it, record each
//! outcome; wait for a commit that wrote messages (or the poll, which is
//! also the sweep for expired leases and due retries) when nothing is due.
//! The sends and their outcomes are in `sending`.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::destinations::Deliver;
use super::row_clock::RowClock;
use crate::clock::Clock;
use crate::config::Destination;
use crate::rng::SplitMix64;
use crate::store::{Attempted, OutboxRow, Recorded, Store, StoreError};
use crate::telemetry::OutboxInstruments;

/// Rows claimed at once: also the number of sends in flight per relay (an
/// ordered destination's claim has at most one per account and currency).
pub const BATCH: i64 = 64;
/// After a claim that was not full, how long the relay lets messages
/// gather before the next: under load a claim then takes a full batch (two
/// short write transactions per batch, not per message), at the price of
/// this much latency.
const LINGER: Duration = Duration::from_millis(20);
/// How long a claim stays leased beyond the send's own timeout: time to
/// record the outcome (one short transaction, tried again while the
/// database refuses it: [`Relay::record`]) before another relay may take
/// the row. Also how long a crashed relay's rows wait to be sent again.
pub(super) const LEASE_MARGIN: Duration = Duration::from_secs(10);
/// A record that failed is tried again after this, doubling up to
/// [`RECORD_RETRY_MAX`], while at least [`RECORD_RETRY_BEFORE_LEASE_ENDS`]
/// of the lease is left after the wait; each try ends by
/// [`RECORD_ENDS_BEFORE_LEASE`] before the lease does.
const RECORD_RETRY_FIRST: Duration = Duration::from_millis(50);
const RECORD_RETRY_MAX: Duration = Duration::from_secs(2);
const RECORD_RETRY_BEFORE_LEASE_ENDS: Duration = Duration::from_secs(5);
const RECORD_ENDS_BEFORE_LEASE: Duration = Duration::from_secs(2);
/// How often a relay tidies its destination's rows: an ordered one's rows
/// behind a stuck message of their account are flagged, out of the claim's
/// way, and a flag missed is cleared (`store::outbox::behind`).
pub const TIDY: Duration = Duration::from_secs(10);

pub struct Relay {
    pub store: Store,
    pub destination: Destination,
    pub sender: Arc<dyn Deliver>,
    /// Names this relay's leases; each claim's name adds its number.
    pub owner: String,
    /// When nothing woke it, how often it looks anyway.
    pub poll: Duration,
    /// At shutdown, how long sends in flight may take to finish before
    /// their leases are handed back.
    pub grace: Duration,
    /// How often the destination's rows are tidied ([`TIDY`]): flagged and
    /// cleared when it is ordered, every flag cleared when it is not.
    pub tidy: Duration,
    pub instruments: OutboxInstruments,
    /// This host's clock: the rows' times on SQLite, a message's lag.
    pub clock: Arc<dyn Clock>,
}

impl Relay {
    pub async fn run(self, mut wake: watch::Receiver<u64>, mut stop: watch::Receiver<bool>) {
        let mut rng = SplitMix64::new(seed());
        let lease = self.destination.timeout + LEASE_MARGIN;
        let mut upkeep = Upkeep::default();
        let mut claims: u64 = 0;
        let mut rows_clock = RowClock::new(self.clock.clone());
        while !*stop.borrow() {
            rows_clock.refresh(&self.store).await;
            // Nothing judged by a clock that may not be the database's, and
            // nothing claimed before the rows' flags match the config.
            if !rows_clock.ready() || !self.upkeep(&mut upkeep, &rows_clock, &stop).await {
                if sleep_or_stop(self.poll, &mut stop, None).await.is_break() {
                    break;
                }
                continue;
            }
            wake.borrow_and_update();
            let now_ms = rows_clock.now_ms();
            // The rows are this relay's until then (taken before the claim,
            // as `now_ms` is: never later than the rows' own lease).
            let lease_ends = Instant::now() + lease;
            // Its outcomes are recorded under this name alone, so a record
            // never marks a row that was claimed again since.
            claims += 1;
            let claim = format!("{}/{claims}", self.owner);
            let rows = match self.claim(&claim, now_ms, lease).await {
                Ok(rows) if !rows.is_empty() => rows,
                Ok(_) => {
                    let woken = Some(&mut wake);
                    if sleep_or_stop(self.poll, &mut stop, woken).await.is_break() {
                        break;
                    }
                    continue;
                }
                Err(error) => {
                    tracing::warn!(
                        destination = %self.destination.name,
                        "outbox: claim failed, trying again: {error}"
                    );
                    tokio::time::sleep(self.poll).await;
                    continue;
                }
            };
            let sent = (claim.as_str(), rows.as_slice(), lease_ends);
            self.deliver(sent, &rows_clock, &mut stop, &mut rng).await;
        }
    }

    /// Syncs the rows' `ordered` flags, tidies the destination's rows and
    /// sends its due anchor parts when a tidy is due; whether the flags are
    /// synced, so the relay may claim.
    async fn upkeep(
        &self,
        upkeep: &mut Upkeep,
        rows_clock: &RowClock,
        stop: &watch::Receiver<bool>,
    ) -> bool {
        if upkeep.tidied.is_none_or(|at| at.elapsed() >= self.tidy) {
            upkeep.synced |= self.sync_ordered(upkeep.synced).await;
            self.tidy(rows_clock.now_ms()).await;
            self.send_anchors(rows_clock, stop).await;
            upkeep.tidied = Some(Instant::now());
        }
        if !upkeep.synced {
            // Tried again after the wait, not a whole tidy later.
            upkeep.tidied = None;
        }
        upkeep.synced
    }

    /// Claims up to [`BATCH`] due rows under the name `claim`, leased for
    /// `lease` from `now_ms`.
    async fn claim(
        &self,
        claim: &str,
        now_ms: i64,
        lease: Duration,
    ) -> Result<Vec<OutboxRow>, StoreError> {
        self.store
            .claim_outbox(
                &self.destination.name,
                self.destination.ordered_by_account,
                claim,
                now_ms,
                now_ms + lease.as_millis() as i64,
                BATCH,
            )
            .await
    }

    /// Sends the claimed rows, records their outcomes and counts them; after
    /// a claim that was not full, lingers so the next one gathers more.
    async fn deliver(
        &self,
        (claim, rows, lease_ends): (&str, &[OutboxRow], Instant),
        rows_clock: &RowClock,
        stop: &mut watch::Receiver<bool>,
        rng: &mut SplitMix64,
    ) {
        let full = rows.len() as i64 >= BATCH;
        let results = self.send(rows, stop).await;
        let outcomes = self.outcomes(rows, results, rng);
        let recording = self.record(claim, &outcomes, lease_ends, rows_clock, stop);
        match recording.await {
            Ok(recorded) => {
                self.count(rows, &recorded);
                if !full {
                    tokio::time::sleep(LINGER).await;
                }
            }
            Err(error) => {
                // The claims stay leased: nothing is sent again before
                // the lease passes, then the sweep takes the rows again.
                tracing::warn!(
                    destination = %self.destination.name,
                    "outbox: could not record {} attempts, retried after their lease: {error}",
                    outcomes.len()
                );
                tokio::time::sleep(self.poll).await;
            }
        }
    }

    /// Counts what a record marked: delivered, dead, and each delivered
    /// message's lag since it was posted.
    fn count(&self, rows: &[OutboxRow], recorded: &Recorded) {
        let name = &self.destination.name;
        self.instruments.delivered(name, recorded.delivered());
        self.instruments.dead(name, recorded.dead);
        // The rows this record marked: not one another relay
        // or an earlier try recorded.
        let now = self.clock.now();
        for row in rows {
            if recorded.delivered_ids.contains(&row.outbox_id) {
                let lag = (now - row.posted_at).as_seconds_f64();
                self.instruments.acknowledged_after(name, lag);
            }
        }
    }

    /// Records the attempts' outcomes. A transient failure (the database
    /// busy or restarting) is tried again, backing off, until
    /// [`RECORD_RETRY_BEFORE_LEASE_ENDS`] before the claims' lease ends,
    /// and not once the relay is stopping: every statement of the record
    /// changes only rows still in this claim's lease, so a second try
    /// changes nothing the first did (nor a row replayed or claimed again
    /// since), and a message the destination acknowledged
    /// is not sent again only because its acknowledgement could not be
    /// written at once. Every try ends [`RECORD_ENDS_BEFORE_LEASE`] before
    /// the lease does (dropped, it rolls back), so no record races another
    /// relay that took the rows over; then the sweep sends them again (at
    /// least once).
    async fn record(
        &self,
        claim: &str,
        outcomes: &[(&OutboxRow, Attempted)],
        lease_ends: Instant,
        rows_clock: &RowClock,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<Recorded, StoreError> {
        let mut wait = RECORD_RETRY_FIRST;
        loop {
            let limit = lease_ends
                .saturating_duration_since(Instant::now())
                .saturating_sub(RECORD_ENDS_BEFORE_LEASE);
            let recording = self.store.record_attempts(
                claim,
                outcomes,
                self.destination.ordered_by_account,
                rows_clock.now_ms(),
            );
            let error = match tokio::time::timeout(limit, recording).await {
                Ok(Ok(recorded)) => return Ok(recorded),
                Ok(Err(error)) => error,
                // Too close to the lease's end: as if the database had
                // not answered at all.
                Err(_elapsed) => return Err(StoreError::Unavailable(sqlx::Error::PoolTimedOut)),
            };
            let time_left = lease_ends.saturating_duration_since(Instant::now());
            let retry = error.is_transient()
                && !*stop.borrow()
                && time_left >= wait + RECORD_RETRY_BEFORE_LEASE_ENDS;
            if !retry {
                return Err(error);
            }
            tracing::warn!(
                destination = %self.destination.name,
                "outbox: could not record {} attempts, trying again in {} ms: {error}",
                outcomes.len(),
                wait.as_millis()
            );
            // Stopping: one more try now, then no other. A dropped sender
            // is a stop too, and would wake this at once: no more tries.
            if sleep_or_stop(wait, stop, None).await.is_break() {
                return Err(error);
            }
            wait = (wait * 2).min(RECORD_RETRY_MAX);
        }
    }

    /// Makes the destination's undelivered rows' `ordered` flags match its
    /// config; whether that succeeded. `synced`: it did once before, and
    /// the relay claims meanwhile.
    async fn sync_ordered(&self, synced: bool) -> bool {
        let name = &self.destination.name;
        let ordered = self.destination.ordered_by_account;
        match self.store.sync_ordered(name, ordered).await {
            Ok(0) => true,
            Ok(changed) => {
                let now = ["no longer", "now"][usize::from(ordered)];
                tracing::info!(
                    destination = %name,
                    "outbox: {changed} message(s) {now} kept in their account's order"
                );
                true
            }
            Err(error) => {
                let meanwhile = match synced {
                    true => "tried again at the next tidy",
                    false => "claiming nothing until it can",
                };
                tracing::warn!(
                    destination = %name,
                    "outbox: could not match the messages' order to the config, {meanwhile}: {error}"
                );
                false
            }
        }
    }

    /// Flags the rows waiting behind a stuck message of their account (an
    /// ordered destination), or clears every flag (one that is not); a
    /// failure only leaves the claim as slow as before.
    async fn tidy(&self, now_ms: i64) {
        let name = &self.destination.name;
        let ordered = self.destination.ordered_by_account;
        let next_ms = now_ms + self.tidy.as_millis() as i64;
        match self.store.tidy_outbox(name, ordered, next_ms).await {
            Ok(tidied) if tidied.cleared > 0 => tracing::info!(
                destination = %name,
                "outbox: {} message(s) no longer wait behind another; cleared",
                tidied.cleared
            ),
            Ok(_) => {}
            Err(error) => tracing::warn!(destination = %name, "outbox: tidy failed: {error}"),
        }
    }
}

/// When the destination's rows were last tidied (none: at once, then every
/// `tidy`), and whether their `ordered` flags have matched the config once:
/// no claim before that (an ordered claim reads the flags:
/// `Store::sync_ordered`).
#[derive(Default)]
struct Upkeep {
    tidied: Option<Instant>,
    synced: bool,
}

/// Sleeps for `duration`, or less: until `stop` changes (a stop signalled)
/// or, with `wake`, until a commit wakes the relay; without it a commit
/// does not end the wait (for the rows' clock, the flags' sync, a record's
/// retry: those wait for time to pass). `Break` when the stop's sender is
/// gone: a dropped sender is a stop too. Two `select!`s, not one with a wake
/// that never comes: an idle arm would change how `select!` picks among arms
/// ready at once.
async fn sleep_or_stop(
    duration: Duration,
    stop: &mut watch::Receiver<bool>,
    wake: Option<&mut watch::Receiver<u64>>,
) -> ControlFlow<()> {
    let stopped = match wake {
        None => tokio::select! {
            () = tokio::time::sleep(duration) => false,
            changed = stop.changed() => changed.is_err(),
        },
        Some(wake) => tokio::select! {
            _ = wake.changed() => false,
            () = tokio::time::sleep(duration) => false,
            changed = stop.changed() => changed.is_err(),
        },
    };
    match stopped {
        true => ControlFlow::Break(()),
        false => ControlFlow::Continue(()),
    }
}

pub(super) fn seed() -> u64 {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    u64::from_le_bytes(bytes)
}
