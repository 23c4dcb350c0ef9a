//! Linking audit rows as they are written: the audit trail is one chain,
//! numbered by `chain_seq`, whose head (number and link) is the one row of
//! `audit_chain`. A writer locks that row first (PostgreSQL: `for update`;
//! SQLite runs one writer at a time), so concurrent operators' rows are
//! numbered and linked one after the other, in the order they lock it.
//!
//! Lock order: the audit head is the last lock a transaction takes; what
//! each writer of audit rows does after it inserts new rows only (a guard
//! reset's row, a skip's ranges), which waits for no row another holds. So
//! no two transactions wait for each other through it.

use chrono::{DateTime, Utc};

use super::hash::{AuditContent, GENESIS, Link, audit_link, stored};
use crate::store::write::{NewAudit, TxConn, WriteTx, on_tx};
use crate::store::{AuditRow, StoreError};

/// A stored audit row with its links.
#[derive(Debug, sqlx::FromRow)]
pub(in crate::store) struct ChainAuditRow {
    #[sqlx(flatten)]
    pub row: AuditRow,
    pub chain_seq: Option<i64>,
    pub prev_hash: Option<Vec<u8>>,
    pub row_hash: Option<Vec<u8>>,
    /// Linked after it was written (`chained_at` is set).
    pub linked_late: bool,
}

/// The columns of `ChainAuditRow`.
macro_rules! chain_audit_columns {
    () => {
        "audit_id, chain_seq, action, source, event_id, account_id, previous_status, actor, \
         note, detail, created_at, prev_hash, row_hash, (chained_at is not null) as linked_late"
    };
}
pub(in crate::store) use chain_audit_columns;

impl ChainAuditRow {
    /// What its link covers, at number `chain_seq`.
    pub fn content(&self, chain_seq: i64) -> AuditContent<'_> {
        let row = &self.row;
        AuditContent {
            chain_seq,
            action: &row.action,
            source: &row.source,
            event_id: row.event_id.as_deref(),
            account_id: row.account_id.as_deref(),
            previous_status: &row.previous_status,
            actor: &row.actor,
            note: row.note.as_deref(),
            detail: row.detail.as_deref(),
            created_at: row.created_at,
        }
    }
}

/// What a new audit row's link covers.
fn content_of<'a>(audit: &'a NewAudit<'a>, chain_seq: i64) -> AuditContent<'a> {
    AuditContent {
        chain_seq,
        action: audit.action,
        source: audit.source,
        event_id: audit.event_id,
        account_id: audit.account_id,
        previous_status: audit.previous_status.as_str(),
        actor: audit.actor,
        note: audit.note,
        detail: audit.detail,
        created_at: audit.created_at,
    }
}

/// The head, locked until the transaction ends: PostgreSQL's row lock.
const LOCK_HEAD_PG: &str =
    "select chain_seq, head, last_audit_id from audit_chain where chain_id = 1 for update";
/// SQLite's writer holds the database's one write lock already.
const READ_HEAD_SQLITE: &str =
    "select chain_seq, head, last_audit_id from audit_chain where chain_id = 1";

/// The head, and the highest audit id linked (never lowered).
const SET_HEAD: &str = "
update audit_chain set chain_seq = $1, head = $2,
    last_audit_id = case when last_audit_id < $3 then $3 else last_audit_id end
where chain_id = 1";

/// Rows written without a link (by the version before chains, or before
/// the upgrade) after audit id `$1`, oldest first: by the primary key from
/// the highest id linked, as every writer looks; from 0, a scan of the
/// table, as the backfill looks (a row of an older version that committed
/// after a later one was linked has a lower id).
const UNLINKED: &str = concat!(
    "select ",
    chain_audit_columns!(),
    " from audit_log where audit_id > $1 and chain_seq is null order by audit_id limit $2"
);

/// Links a row written without one; `chain_seq is null`: never a row
/// linked already.
const SET_LINKS: &str = "
update audit_log set chain_seq = $2, prev_hash = $3, row_hash = $4, chained_at = $5
where audit_id = $1 and chain_seq is null";

const INSERT_AUDIT: &str = "
insert into audit_log (action, source, event_id, account_id, previous_status, actor, note,
    detail, created_at, chain_seq, prev_hash, row_hash)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
returning audit_id";

/// Unlinked rows linked per statement batch.
const LINK_BATCH: i64 = 1_000;

impl WriteTx {
    /// Writes the audit row, linked to the one before it; returns its id.
    pub async fn insert_audit(&mut self, audit: &NewAudit<'_>) -> Result<i64, StoreError> {
        let (seq, head) = self.lock_audit_head(audit.created_at, false).await?;
        let chain_seq = seq + 1;
        let own = audit_link(&content_of(audit, chain_seq), &head);
        let (audit_id,): (i64,) = on_tx!(self, conn => sqlx::query_as(INSERT_AUDIT)
            .bind(audit.action)
            .bind(audit.source)
            .bind(audit.event_id)
            .bind(audit.account_id)
            .bind(audit.previous_status.as_str())
            .bind(audit.actor)
            .bind(audit.note)
            .bind(audit.detail)
            .bind(audit.created_at)
            .bind(chain_seq)
            .bind(&head[..])
            .bind(&own[..])
            .fetch_one(conn)
            .await)?;
        self.set_audit_head(chain_seq, &own, audit_id).await?;
        Ok(audit_id)
    }

    /// Locks the audit chain's head and links the rows written without a
    /// link (marked `chained_at` `now`): those after the highest id linked,
    /// or with `all`, every one; returns the head.
    pub(in crate::store) async fn lock_audit_head(
        &mut self,
        now: DateTime<Utc>,
        all: bool,
    ) -> Result<(i64, Link), StoreError> {
        let (mut seq, head, last_id): (i64, Option<Vec<u8>>, i64) = match &mut self.conn {
            TxConn::Postgres(tx) => sqlx::query_as(LOCK_HEAD_PG).fetch_one(&mut **tx).await?,
            TxConn::Sqlite(tx, _) => {
                sqlx::query_as(READ_HEAD_SQLITE)
                    .fetch_one(&mut **tx)
                    .await?
            }
        };
        let mut link = stored(head.as_deref()).unwrap_or(GENESIS);
        let mut after = if all { 0 } else { last_id };
        loop {
            let rows: Vec<ChainAuditRow> = on_tx!(self, conn => sqlx::query_as(UNLINKED)
                .bind(after)
                .bind(LINK_BATCH)
                .fetch_all(conn)
                .await)?;
            let Some(last) = rows.last() else {
                break;
            };
            after = last.row.audit_id;
            for row in &rows {
                seq += 1;
                let own = audit_link(&row.content(seq), &link);
                on_tx!(self, conn => sqlx::query(SET_LINKS)
                    .bind(row.row.audit_id)
                    .bind(seq)
                    .bind(&link[..])
                    .bind(&own[..])
                    .bind(now)
                    .execute(conn)
                    .await
                    .map(drop))?;
                link = own;
            }
            self.set_audit_head(seq, &link, after).await?;
        }
        Ok((seq, link))
    }

    async fn set_audit_head(
        &mut self,
        seq: i64,
        link: &Link,
        audit_id: i64,
    ) -> Result<(), StoreError> {
        on_tx!(self, conn => sqlx::query(SET_HEAD)
            .bind(seq)
            .bind(&link[..])
            .bind(audit_id)
            .execute(conn)
            .await
            .map(drop))?;
        Ok(())
    }
}
