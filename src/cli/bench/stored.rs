//! `--stored`: the database the phases start from holds N postings, filled
//! set-based (`store::fill`) while no server runs, and the reads an
//! operator makes at that size are timed: the admin's searches, the page
//! of the account with the most entries, the held queue, the ledger check
//! and a retention batch of each kind.

use std::time::{Duration, Instant};

use chrono::Utc;

use crate::store::{EventFilter, FillShape, Store};

/// Postings per transaction: large enough that a statement's overhead is
/// nothing, small enough that SQLite's one transaction stays in memory.
const BATCH: u64 = 100_000;
/// The stored postings spread over a year of receipts.
const SPAN_SECS: i64 = 365 * 86_400;
/// The retention defaults (`retention.payload_days`, `outbox_days`).
const PAYLOAD_DAYS: u32 = 90;
const OUTBOX_DAYS: u32 = 7;
/// Each read is timed this many times; the first pays for a cold cache.
const TIMES: usize = 3;

/// `0`, `1M`, `10M`, `1.5M`: a size as the rows name it.
pub fn label(n: u64) -> String {
    match n {
        0 => "0".to_owned(),
        n if n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

/// The sizes in the order they are run: each at least the one before (a
/// fill only grows).
pub fn check_sizes(sizes: &[u64]) -> Result<(), String> {
    match sizes.windows(2).any(|w| w[1] < w[0]) {
        true => Err("--stored: each size must be at least the one before".into()),
        false => Ok(()),
    }
}

/// Fills the database to `postings` (continuing an earlier fill), then
/// prints what it took and what the database weighs.
pub async fn fill_to(store: &Store, postings: u64, accounts: u64) -> Result<(), String> {
    let shape = FillShape {
        postings,
        accounts,
        now: Utc::now(),
        span_secs: SPAN_SECS,
        payload_days: PAYLOAD_DAYS,
        outbox_days: OUTBOX_DAYS,
    };
    let started = Instant::now();
    let from = store.filled_postings().await.map_err(|e| e.to_string())?;
    if from >= postings {
        println!(
            "stored {}: already filled ({from} postings)",
            label(postings)
        );
        return Ok(());
    }
    let mut at = from;
    while at < postings {
        let to = (at + BATCH).min(postings);
        store
            .fill_batch(&shape, at, to)
            .await
            .map_err(|e| format!("filling postings {at}..{to}: {e}"))?;
        at = to;
    }
    let batches = started.elapsed();
    store.finish_fill().await.map_err(|e| e.to_string())?;
    let bytes = store.stored_bytes().await.map_err(|e| e.to_string())?;
    let added = postings - from;
    println!(
        "stored {}: {added} postings filled in {:.1} s ({:.0}/s; guards, balances{} {:.1} s), \
         database {:.0} MB ({:.0} MB per million postings)",
        label(postings),
        batches.as_secs_f64(),
        added as f64 / batches.as_secs_f64(),
        if matches!(store, Store::Postgres(..)) {
            " and vacuum"
        } else {
            ""
        },
        (started.elapsed() - batches).as_secs_f64(),
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / (postings as f64 / 1e6),
    );
    Ok(())
}

/// Times the operator's reads at this size, `TIMES` each, and prints one
/// line per read: the first time (cold), the fastest, and the rows the
/// first found (or purged). The two purges are writes, run as the
/// retention task runs them, with a cutoff a day inside the fill's
/// retention line, so that a day's rows are due.
pub async fn time_reads(store: &Store, postings: u64) -> Result<(), String> {
    let label = label(postings);
    let middle = format!("evt_{}", postings / 2);
    let newest = EventFilter {
        limit: 50,
        ..EventFilter::default()
    };
    let by_account = EventFilter {
        account_id: Some("acct_0".to_owned()),
        ..newest.clone()
    };
    let by_id = EventFilter {
        event_id: Some(middle.clone()),
        ..newest.clone()
    };
    let held_of_source = EventFilter {
        source: Some("stripe".to_owned()),
        status: Some(crate::domain::Status::Stale),
        ..newest.clone()
    };
    let reads: [(&str, Read); 9] = [
        ("search newest", Read::Events(newest)),
        ("search account", Read::Events(by_account)),
        ("search event id", Read::Events(by_id)),
        ("search stale", Read::Events(held_of_source)),
        ("account page", Read::Entries(None)),
        ("account deep page", Read::Entries(Some(postings / 2))),
        ("held queue", Read::Held),
        ("retention batch", Read::PurgePayloads),
        ("outbox purge batch", Read::PurgeOutbox),
    ];
    for (name, read) in reads {
        let mut times = Vec::with_capacity(TIMES);
        let mut rows = None;
        for _ in 0..TIMES {
            let started = Instant::now();
            let found = read.run(store).await.map_err(|e| format!("{name}: {e}"))?;
            times.push(started.elapsed());
            // The first time's: a purge finds less each time.
            rows.get_or_insert(found);
        }
        let rows = rows.unwrap_or_default();
        print_read(&label, name, &times, rows);
    }
    let started = Instant::now();
    let violations = store.check_invariants().await.map_err(|e| e.to_string())?;
    print_read(
        &label,
        "ledger check",
        &[started.elapsed()],
        violations.len(),
    );
    match violations.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "the stored data breaks {} invariant(s): {:?}",
            violations.len(),
            violations.first()
        )),
    }
}

fn print_read(label: &str, name: &str, times: &[Duration], rows: usize) {
    let ms = |d: &Duration| d.as_secs_f64() * 1e3;
    let best = times.iter().min().map(ms).unwrap_or_default();
    println!(
        "read @{label:<4} {name:<20} first {:>9.1} ms  best {best:>9.1} ms  rows {rows}",
        times.first().map(ms).unwrap_or_default()
    );
}

/// One timed read, as the admin (or the retention task) makes it.
enum Read {
    Events(EventFilter),
    /// `acct_0`'s newest entries, or those before its entry near the
    /// middle of the ledger.
    Entries(Option<u64>),
    Held,
    PurgePayloads,
    PurgeOutbox,
}

impl Read {
    async fn run(&self, store: &Store) -> Result<usize, crate::store::StoreError> {
        let now = Utc::now();
        Ok(match self {
            Read::Events(filter) => store.list_events(filter).await?.len(),
            Read::Entries(before) => store
                .account_entries("acct_0", before.map(|b| b as i64), 50)
                .await?
                .len(),
            Read::Held => store.held_queue(50).await?.len(),
            // A day past the fill's retention line: a day of payloads is due.
            Read::PurgePayloads => {
                let cutoff = now - chrono::Duration::days(i64::from(PAYLOAD_DAYS) - 1);
                store.purge_payloads(cutoff, 500, now).await? as usize
            }
            Read::PurgeOutbox => {
                let cutoff = now - chrono::Duration::days(i64::from(OUTBOX_DAYS) - 1);
                store
                    .purge_delivered(cutoff.timestamp_millis(), 500)
                    .await? as usize
            }
        })
    }
}
