//! Walking every chain: each account's ledger (per currency, by
//! `account_seq`) and the audit trail (by `chain_seq`), recomputing every
//! link, and reporting the first break of each chain:
//! - `edited`: a row whose previous link is right but whose own link is
//!   not its content's (its content, or its link, was changed);
//! - `deleted`: numbers missing from the chain (the rows between two ids,
//!   or after the last, were deleted);
//! - `reordered`: a row linked to a row that now comes after it;
//! - `relinked`: a row whose link is right for its content but names a
//!   previous link no row has: the row before it was changed and its link
//!   computed again, or inserted, or rows between were deleted and the
//!   numbers closed up;
//! - `unlinked`: a row with no link (written by hand, or by the version
//!   before chains and not linked yet: the backfill links those).
//!
//! Reads the chains' ends first (each balance's `postings`, the audit
//! head), then the rows, streamed from the database chain by chain, in
//! order: rows written meanwhile only come after the ends read. Whole, or
//! from where a `ChainCursor` saw each chain whole (the periodic check).

use std::collections::HashMap;
use std::future::poll_fn;
use std::pin::Pin;

use futures_core::Stream;
use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::QueryBuilder;

use super::audit::{ChainAuditRow, chain_audit_columns};
use super::entries::{ChainEntryRow, chain_entry_columns};
use super::hash::{GENESIS, Link, audit_link, entry_link, stored};
use crate::store::{Store, StoreError};

/// What `verify` found.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct ChainReport {
    /// Ledger entries walked.
    pub entries: u64,
    /// Ledger chains (one per account and currency).
    pub chains: u64,
    /// Audit rows walked.
    pub audit_rows: u64,
    /// Rows walked that were linked after they were written (`chained_at`):
    /// the backfill of what was written before chains, or an older
    /// version's rows.
    pub linked_late: u64,
    /// The first break of each chain that has one.
    pub breaks: Vec<Break>,
}

/// The first break of one chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Break {
    /// `ledger` or `audit`.
    pub trail: Trail,
    /// The ledger chain's account and currency.
    pub account_id: Option<String>,
    pub currency: Option<String>,
    pub kind: BreakKind,
    /// The row named: an entry id or an audit id (none for a deleted row).
    pub row_id: Option<i64>,
    /// The number in its chain where it breaks.
    pub position: i64,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Trail {
    Ledger,
    Audit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BreakKind {
    Edited,
    Deleted,
    Reordered,
    Relinked,
    Unlinked,
    /// An anchored row whose link is not the one anchored (`--against`).
    Rewritten,
}

impl ChainReport {
    pub fn is_clean(&self) -> bool {
        self.breaks.is_empty()
    }
}

/// A row of a chain, as the walk reads it.
trait Linked {
    fn id(&self) -> i64;
    fn seq(&self) -> i64;
    fn prev(&self) -> Option<Link>;
    fn own(&self) -> Option<Link>;
    /// Its link as computed from its content after `prev`.
    fn computed(&self, prev: &Link) -> Link;
}

impl Linked for ChainEntryRow {
    fn id(&self) -> i64 {
        self.entry.entry_id
    }
    fn seq(&self) -> i64 {
        self.entry.account_seq
    }
    fn prev(&self) -> Option<Link> {
        stored(self.prev_hash.as_deref())
    }
    fn own(&self) -> Option<Link> {
        stored(self.entry_hash.as_deref())
    }
    fn computed(&self, prev: &Link) -> Link {
        entry_link(&self.content(), prev)
    }
}

impl Linked for ChainAuditRow {
    fn id(&self) -> i64 {
        self.row.audit_id
    }
    fn seq(&self) -> i64 {
        self.chain_seq.unwrap_or_default()
    }
    fn prev(&self) -> Option<Link> {
        stored(self.prev_hash.as_deref())
    }
    fn own(&self) -> Option<Link> {
        stored(self.row_hash.as_deref())
    }
    fn computed(&self, prev: &Link) -> Link {
        audit_link(&self.content(self.seq()), prev)
    }
}

/// A break found where a row's previous link is not the link of the row
/// before it: what it is depends on the rows after it.
struct Pending {
    row_id: i64,
    position: i64,
    prev: Option<Link>,
    /// Its own link is its content's after the previous link it names.
    intact: bool,
    /// The row before it.
    before: Option<i64>,
}

/// One chain's walk, row by row in order.
struct Walk {
    /// The number the next row must have, the link it must name, and the
    /// id of the row before it.
    next: i64,
    last: Link,
    last_id: Option<i64>,
    /// The first row is the one found whole before.
    anchor: bool,
    found: Option<(BreakKind, Option<i64>, i64, String)>,
    pending: Option<Pending>,
    /// After a pending break: the links of the rows after it.
    later: HashMap<Link, i64>,
}

impl Walk {
    fn new() -> Self {
        Walk {
            next: 1,
            last: GENESIS,
            last_id: None,
            anchor: false,
            found: None,
            pending: None,
            later: HashMap::new(),
        }
    }

    /// A walk from row `from`, found whole before (0: from the start): its
    /// first row is taken as it is, for its link.
    fn from(from: i64) -> Self {
        Walk {
            next: from.max(1),
            anchor: from > 0,
            ..Walk::new()
        }
    }

    fn step(&mut self, row: &impl Linked, noun: &str) {
        if self.anchor {
            self.anchor = false;
            if row.seq() == self.next
                && let Some(own) = row.own()
            {
                self.next += 1;
                self.last = own;
                self.last_id = Some(row.id());
                return;
            }
            // The row found whole before is gone or unlinked: walk it as
            // any row, from a link no row has.
            self.last = [0xff; 32];
        }
        if self.pending.is_some() {
            if let Some(own) = row.own() {
                self.later.insert(own, row.id());
            }
            return;
        }
        if self.found.is_some() {
            return;
        }
        let (id, seq) = (row.id(), row.seq());
        let Some(own) = row.own() else {
            self.found = Some((
                BreakKind::Unlinked,
                Some(id),
                seq,
                format!(
                    "{noun} {id} has no link: written by hand, or by a version before chains and not linked yet"
                ),
            ));
            return;
        };
        if seq > self.next {
            let missing = if seq == self.next + 1 {
                format!("number {}", self.next)
            } else {
                format!("numbers {} to {}", self.next, seq - 1)
            };
            self.found = Some((
                BreakKind::Deleted,
                None,
                self.next,
                format!(
                    "{missing} missing, {}",
                    between(noun, self.last_id, Some(id))
                ),
            ));
            return;
        }
        let prev = row.prev();
        if prev != Some(self.last) || seq < self.next {
            self.pending = Some(Pending {
                row_id: id,
                position: seq,
                prev,
                intact: prev.is_some_and(|prev| row.computed(&prev) == own),
                before: self.last_id,
            });
            return;
        }
        if row.computed(&self.last) != own {
            self.found = Some((
                BreakKind::Edited,
                Some(id),
                seq,
                format!("{noun} {id} is not what was linked: its content or its link was changed"),
            ));
            return;
        }
        self.next = seq + 1;
        self.last = own;
        self.last_id = Some(id);
    }

    /// The chain's first break, if any; `end` is the number its last row
    /// must have at least (the balance's postings, the audit head).
    fn finish(self, end: i64, noun: &str) -> Option<(BreakKind, Option<i64>, i64, String)> {
        if let Some(pending) = self.pending {
            let id = pending.row_id;
            if let Some(follows) = pending.prev.and_then(|prev| self.later.get(&prev)) {
                return Some((
                    BreakKind::Reordered,
                    Some(id),
                    pending.position,
                    format!("{noun} {id} comes before {noun} {follows}, which it was linked after"),
                ));
            }
            if pending.intact {
                let before = pending
                    .before
                    .map_or("the start".to_owned(), |b| format!("{noun} {b}"));
                return Some((
                    BreakKind::Relinked,
                    pending.before.or(Some(id)),
                    pending.position,
                    format!(
                        "{noun} {id} was linked after a row that is not {before}: {before} was changed and linked again, or inserted, or rows before {noun} {id} were deleted and renumbered"
                    ),
                ));
            }
            return Some((
                BreakKind::Edited,
                Some(id),
                pending.position,
                format!(
                    "{noun} {id} is not what was linked: its content or its links were changed"
                ),
            ));
        }
        if self.found.is_some() {
            return self.found;
        }
        (end >= self.next).then(|| {
            let missing = if end == self.next {
                format!("number {end}")
            } else {
                format!("numbers {} to {end}", self.next)
            };
            (
                BreakKind::Deleted,
                None,
                self.next,
                format!("{missing} missing, {}", between(noun, self.last_id, None)),
            )
        })
    }
}

/// The next item of a stream of rows.
async fn next<S: Stream + Unpin>(rows: &mut S) -> Option<S::Item> {
    poll_fn(|cx| Pin::new(&mut *rows).poll_next(cx)).await
}

fn between(noun: &str, before: Option<i64>, after: Option<i64>) -> String {
    match (before, after) {
        (Some(before), Some(after)) => format!("between {noun} {before} and {noun} {after}"),
        (None, Some(after)) => format!("before {noun} {after}"),
        (Some(before), None) => format!("after {noun} {before}, the last"),
        (None, None) => "every row".to_owned(),
    }
}

/// Each balance's number of postings: where its chain must reach.
const CHAIN_ENDS: &str = "select account_id, currency, postings from balances";
const AUDIT_END: &str = "select chain_seq from audit_chain where chain_id = 1";

/// The entries of the chains in `c` (pushed values: account, currency,
/// the number to start from), each chain in order. By the ledger's unique
/// key (account, currency, number).
const ENTRIES_FROM: (&str, &str) = (
    "with c (account_id, currency, from_seq) as (",
    concat!(
        ") select ",
        chain_entry_columns!("e"),
        " from ledger_entries e join c on e.account_id = c.account_id \
         and e.currency = c.currency and e.account_seq >= c.from_seq \
         order by e.account_id, e.currency, e.account_seq"
    ),
);
const AUDIT_ROWS: &str = concat!(
    "select ",
    chain_audit_columns!(),
    " from audit_log where chain_seq is not null order by chain_seq"
);
const FIRST_UNLINKED_AUDIT: &str = concat!(
    "select ",
    chain_audit_columns!(),
    " from audit_log where chain_seq is null order by audit_id limit 1"
);

/// Chains walked per statement (three values each).
const CHAINS_PER_STATEMENT: usize = 10_000;

/// Where each ledger chain was last found whole: the number of its last
/// entry then, by a digest of its (account, currency). The periodic check
/// keeps one and walks only the entries written since (from the last one
/// found whole, whose link the next must name); an empty one walks all.
#[derive(Debug, Default)]
pub struct ChainCursor {
    whole_to: HashMap<u64, i64>,
}

fn digest(account: &str, currency: &str) -> u64 {
    let mut hash = Sha256::new();
    for part in [account, currency] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    let bytes: [u8; 32] = hash.finalize().into();
    u64::from_be_bytes(bytes[..8].try_into().unwrap_or_default())
}

type Key = (String, String);

/// A chain to walk: where it starts and the number it must reach.
struct ToWalk {
    key: Key,
    from: i64,
    end: i64,
}

/// Walks the chains of `$todo` (`ToWalk`s) on `$conn`, a statement per
/// chunk, into `$report`, resting `$rest` times as long as each chunk took
/// before the next; returns each whole chain's last number.
macro_rules! walk_ledger {
    ($conn:expr, $todo:expr, $report:expr, $rest:expr) => {{
        let mut whole: Vec<(Key, i64)> = Vec::new();
        for chunk in $todo.chunks(CHAINS_PER_STATEMENT) {
            let started = std::time::Instant::now();
            let mut walks: HashMap<Key, Walk> = chunk
                .iter()
                .map(|one| (one.key.clone(), Walk::from(one.from)))
                .collect();
            let mut query = QueryBuilder::new(ENTRIES_FROM.0);
            query.push_values(chunk, |mut row, one| {
                row.push_bind(one.key.0.as_str())
                    .push_bind(one.key.1.as_str())
                    .push_bind(one.from.max(1));
            });
            query.push(ENTRIES_FROM.1);
            let mut rows = query
                .build_query_as::<ChainEntryRow>()
                .persistent(false)
                .fetch(&mut *$conn);
            while let Some(row) = next(&mut rows).await.transpose()? {
                $report.entries += 1;
                $report.linked_late += u64::from(row.linked_late);
                let key = (row.entry.account_id.clone(), row.entry.currency.clone());
                if let Some(walk) = walks.get_mut(&key) {
                    walk.step(&row, "entry");
                }
            }
            drop(rows);
            for one in chunk {
                let Some(walk) = walks.remove(&one.key) else {
                    continue;
                };
                $report.chains += 1;
                let reached = walk.next - 1;
                match walk.finish(one.end, "entry") {
                    None => whole.push((one.key.clone(), reached)),
                    found => $report.push(Trail::Ledger, Some(one.key.clone()), found),
                }
            }
            if $rest > 0 {
                tokio::time::sleep(started.elapsed() * $rest).await;
            }
        }
        whole
    }};
}

/// Walks the audit trail whole on `$conn` into `$report`.
macro_rules! walk_audit {
    ($conn:expr, $report:expr) => {{
        let (end,): (i64,) = sqlx::query_as(AUDIT_END).fetch_one(&mut *$conn).await?;
        let mut walk = Walk::new();
        let mut rows = sqlx::query_as::<_, ChainAuditRow>(AUDIT_ROWS).fetch(&mut *$conn);
        while let Some(row) = next(&mut rows).await.transpose()? {
            $report.audit_rows += 1;
            $report.linked_late += u64::from(row.linked_late);
            walk.step(&row, "audit row");
        }
        drop(rows);
        let unlinked: Option<ChainAuditRow> = sqlx::query_as(FIRST_UNLINKED_AUDIT)
            .fetch_optional(&mut *$conn)
            .await?;
        let found = match unlinked {
            Some(row) if walk.found.is_none() && walk.pending.is_none() => Some((
                BreakKind::Unlinked,
                Some(row.row.audit_id),
                0,
                format!(
                    "audit row {} has no link: written by hand, or by a version before chains \
                     and not linked yet",
                    row.row.audit_id
                ),
            )),
            _ => walk.finish(end, "audit row"),
        };
        $report.push(Trail::Audit, None, found);
    }};
}

/// The chains' ends first, then what `cursor` has not seen whole yet.
macro_rules! verify_on {
    ($conn:expr, $cursor:expr, $rest:expr) => {{
        let ends: Vec<(String, String, i64)> =
            sqlx::query_as(CHAIN_ENDS).fetch_all(&mut *$conn).await?;
        let todo: Vec<ToWalk> = ends
            .into_iter()
            .filter_map(|(account, currency, end)| {
                let from = $cursor
                    .whole_to
                    .get(&digest(&account, &currency))
                    .copied()
                    .unwrap_or(0);
                (end > from).then(|| ToWalk {
                    key: (account, currency),
                    from,
                    end,
                })
            })
            .collect();
        let mut report = ChainReport::default();
        let whole = walk_ledger!($conn, todo, report, $rest);
        walk_audit!($conn, report);
        for ((account, currency), to) in whole {
            $cursor.whole_to.insert(digest(&account, &currency), to);
        }
        report.breaks.sort_by(|a, b| {
            (a.trail as u8, &a.account_id, &a.currency).cmp(&(
                b.trail as u8,
                &b.account_id,
                &b.currency,
            ))
        });
        report
    }};
}

impl ChainReport {
    fn push(
        &mut self,
        trail: Trail,
        key: Option<Key>,
        found: Option<(BreakKind, Option<i64>, i64, String)>,
    ) {
        let Some((kind, row_id, position, detail)) = found else {
            return;
        };
        let (account_id, currency) = key.map_or((None, None), |(a, c)| (Some(a), Some(c)));
        self.breaks.push(Break {
            trail,
            account_id,
            currency,
            kind,
            row_id,
            position,
            detail,
        });
    }
}

impl Store {
    /// Walks every chain whole (`hookledger verify`, the admin's route).
    pub async fn verify_chains(&self) -> Result<ChainReport, StoreError> {
        self.verify_chains_since(&mut ChainCursor::default()).await
    }

    /// Walks what `cursor` has not seen whole (the periodic check: the
    /// entries written since its last run, and the audit trail), and
    /// moves it on to where each chain is now whole. On its own connection,
    /// as the ledger check: on PostgreSQL in a read-only transaction with
    /// the check's statement bound.
    pub async fn verify_chains_since(
        &self,
        cursor: &mut ChainCursor,
    ) -> Result<ChainReport, StoreError> {
        self.verify_chains_paced(cursor, 0).await
    }

    /// [`Store::verify_chains_since`], resting `rest` times as long as each
    /// statement took before the next (the periodic check: a whole walk
    /// of a large ledger in the background then takes at most
    /// 1 / (1 + `rest`) of a core and of the database's time, not all of
    /// it while deliveries wait). Between statements no snapshot is held
    /// (READ COMMITTED; SQLite autocommit), so a slow walk holds back
    /// neither vacuum nor a checkpoint.
    pub async fn verify_chains_paced(
        &self,
        cursor: &mut ChainCursor,
        rest: u32,
    ) -> Result<ChainReport, StoreError> {
        Ok(match self {
            Store::Sqlite(pool, ..) => {
                let mut conn = pool.acquire().await?;
                verify_on!(conn, cursor, rest)
            }
            Store::Postgres(pool, ..) => {
                let mut tx = pool.begin().await?;
                sqlx::raw_sql(crate::store::check::CHECK_BOUND)
                    .execute(&mut *tx)
                    .await?;
                let report = verify_on!(tx, cursor, rest);
                tx.commit().await?;
                report
            }
        })
    }
}
