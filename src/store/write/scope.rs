//! Moving a source's rows into the scope it is configured with now. Run at
//! start-up, before any delivery is served: a database migrated from
//! per-source keys (every row in its source's scope), or a source whose
//! `scope` was changed, ends up with its intents where its deliveries will
//! look for them, so a redelivery of an old event is still a duplicate.
//!
//! Intents are not merged: one whose event id is already recorded in the new
//! scope (the same event received by two sources before they shared a scope)
//! stays where it is and is counted, and so does a payment row still used by
//! intents left in its old scope. A payment row the new scope holds only as
//! a lock gives way to the credited row that follows (DROP_PLACEHOLDERS);
//! the reversals that waited on it are released after the re-scope
//! ([`Store::stranded_payments`]). Each statement is a single
//! conditional update, idempotent, and all run in one write transaction:
//! either every row that can move has moved, or none has.

use super::WriteTx;
use crate::store::{Store, StoreError, on_pool};

/// The source's intents into `scope`, each one unless its event id is taken
/// there. Within one source event ids are unique, so two moving rows never
/// collide with each other.
const MOVE_INTENTS: &str = "
update intents set scope = $2
where source = $1 and scope <> $2
    and not exists (
        select 1 from intents taken where taken.scope = $2 and taken.event_id = intents.event_id)";

/// Payment rows follow the source's intents that name them, once no intent
/// naming them is left in their old scope (another source's that stayed, or
/// one of this source's that could not move) and the new scope has no row of
/// that payment. payment_id, which the ledger refers to, never changes.
const MOVE_PAYMENTS: &str = "
update payments set scope = $2
where scope <> $2
    and exists (
        select 1 from intents moved
        where moved.source = $1 and moved.scope = $2
            and moved.payment_ref = payments.payment_ref)
    and not exists (
        select 1 from intents stayed
        where stayed.scope = payments.scope and stayed.payment_ref = payments.payment_ref)
    and not exists (
        select 1 from payments taken
        where taken.scope = $2 and taken.payment_ref = payments.payment_ref)";

/// A payment row in the new scope that is only a lock (no credit, no
/// reversal: an unmatched reversal received there created it) gives way to
/// the credited row of the same payment that follows this source's intents:
/// left in place, it would let the payment be credited a second time in the
/// new scope, and its waiting reversals would never see the credit. Nothing
/// refers to such a row by id (only a credit's ledger entry does).
const DROP_PLACEHOLDERS: &str = "
delete from payments
where scope = $2 and credited_minor = 0 and reversed_minor = 0 and credited_by is null
    and not exists (select 1 from ledger_entries l where l.credits_payment = payments.payment_id)
    and exists (
        select 1 from payments old
        where old.scope <> $2 and old.payment_ref = payments.payment_ref
            and old.credited_minor > 0
            and exists (
                select 1 from intents moved
                where moved.source = $1 and moved.scope = $2
                    and moved.payment_ref = old.payment_ref)
            and not exists (
                select 1 from intents stayed
                where stayed.scope = old.scope and stayed.payment_ref = old.payment_ref))";

/// Payments of `scope` credited while reversals of theirs still wait: after
/// a merge above, the reversals the new scope received before it.
const STRANDED: &str = "
select distinct i.payment_ref from intents i
join payments p on p.scope = i.scope and p.payment_ref = i.payment_ref
where i.scope = $1 and i.status = 'unmatched' and p.credited_minor > 0
order by i.payment_ref";

const LEFT_INTENTS: &str = "
select count(*) from intents where source = $1 and scope <> $2";

/// What a re-scope did for one source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rescoped {
    pub intents_moved: u64,
    pub payments_moved: u64,
    /// Intents that stay in another scope: their event id is recorded in
    /// this one already.
    pub intents_left: i64,
}

impl Store {
    /// Moves every configured source's rows into its scope; `(source,
    /// scope)` pairs in, what happened to each out.
    pub async fn rescope(&self, sources: &[(&str, &str)]) -> Result<Vec<Rescoped>, StoreError> {
        let mut tx = self.begin().await?;
        let mut done = Vec::with_capacity(sources.len());
        for &(source, scope) in sources {
            done.push(tx.rescope(source, scope).await?);
        }
        tx.commit().await?;
        Ok(done)
    }
}

impl Store {
    /// The payments of `scope` that are credited while reversals of theirs
    /// wait as unmatched.
    pub async fn stranded_payments(&self, scope: &str) -> Result<Vec<String>, StoreError> {
        let rows: Vec<(String,)> = on_pool!(self, pool => sqlx::query_as(STRANDED)
            .bind(scope)
            .fetch_all(pool)
            .await)?;
        Ok(rows.into_iter().map(|(payment,)| payment).collect())
    }
}

impl WriteTx {
    async fn rescope(&mut self, source: &str, scope: &str) -> Result<Rescoped, StoreError> {
        let intents_moved = self.move_rows(MOVE_INTENTS, source, scope).await?;
        self.move_rows(DROP_PLACEHOLDERS, source, scope).await?;
        let payments_moved = self.move_rows(MOVE_PAYMENTS, source, scope).await?;
        let (intents_left,): (i64,) = on_tx!(self, conn => sqlx::query_as(LEFT_INTENTS)
            .bind(source)
            .bind(scope)
            .fetch_one(conn)
            .await)?;
        Ok(Rescoped {
            intents_moved,
            payments_moved,
            intents_left,
        })
    }

    async fn move_rows(
        &mut self,
        sql: &'static str,
        source: &str,
        scope: &str,
    ) -> Result<u64, StoreError> {
        Ok(on_tx!(self, conn => sqlx::query(sql)
            .bind(source)
            .bind(scope)
            .execute(conn)
            .await
            .map(|done| done.rows_affected()))?)
    }
}
