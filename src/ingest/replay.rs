//! A replay's transaction: a stored event, mapped again with the source's
//! current config (see `crate::replay`), decided by the same path as a new
//! delivery, with its audit row.
//!
//! Why it is safe: the first statement takes the event only if it is still
//! in the status the replay saw (`rejected` or `ignored`, neither of which
//! ever posted), and rewrites it there and then (`WriteTx::rewrite_intent`);
//! everything after is what a first delivery of the event would run, in
//! this one transaction. So an applied event stays applied; of two replays
//! (or a replay and a dismiss) that start from the same status, one acts
//! and the other finds the status changed (two replays that each leave the
//! event rejected both run, and post nothing); and a replayed event posts
//! at most once: the ledger's unique `intent_id` and (source, event_id)
//! keys hold as for any posting.

use chrono::{DateTime, Utc};

use super::keys;
use super::outcome::Decided;
use super::{Outcome, RawDelivery, decide_new, event_payload, new_intent};
use crate::domain::{Movement, NormalisedEvent, Status};
use crate::source::Source;
use crate::store::{IntentUpsert, NewAudit, ReplayedInto, Store, StoreError, WriteTx};

/// One replay as asked: the event as mapped now, what was stored, and who
/// asks.
pub struct Replay<'a> {
    pub source: &'a Source,
    /// The stored event, mapped again with the current config.
    pub event: &'a NormalisedEvent,
    /// What the event was stored with: its bytes, digest, first receipt,
    /// headers and signed time (kept as they are).
    pub stored: &'a RawDelivery<'a>,
    /// The status the replay saw, and may start from.
    pub from: Status,
    pub actor: &'a str,
    pub note: Option<&'a str>,
    pub now: DateTime<Utc>,
}

/// Decides the event again; `None` if it is no longer in `from` (nothing
/// was written).
pub async fn rerun(store: &Store, replay: &Replay<'_>) -> Result<Option<Outcome>, StoreError> {
    let Replay {
        source,
        event,
        stored,
        from,
        now,
        ..
    } = *replay;
    let (body, sha256) = event_payload(event, stored);
    let intent = new_intent(source, event, stored, (body, &sha256));
    // A held event the replay posts keeps its old reason as its history
    // (the event page's "Held before"); any other outcome says its own.
    let keep_reason = matches!(event.movement, Movement::Post(_));
    let mut tx = store.begin().await?;
    // The stored event's keys (what it was decided as) and the new
    // decision's.
    let keys = keys::of_events([(source.scope.as_str(), event)]);
    tx.lock_intent_keys(source.name.as_str(), event.event_id.as_str(), keys)
        .await?;
    let Some(intent_id) = tx.rewrite_intent(&intent, from, keep_reason, now).await? else {
        tx.rollback().await?;
        return Ok(None);
    };
    let decided = decide_new(&mut tx, source, event, intent_id, now).await?;
    let detail = format!("replayed with the current config: now {}", decided.status);
    audit(&mut tx, replay, event.event_id.as_str(), &detail).await?;
    tx.commit().await?;
    Ok(Some(outcome(event, decided, false)))
}

/// A replay whose payload now maps to another key (`replay.event`'s, not
/// `original`): applied under that key when it is not stored yet, in one
/// transaction with the original's mark (`ignored`, linked both ways) and
/// the audit row. When the key is stored already (a later event of the same
/// object, another replay), nothing is written and the answer is a
/// duplicate of it, with its status. `None` if the original is no longer
/// in `from` (nothing was written).
///
/// Why it is safe: the new intent is inserted first, as a delivery's is, so
/// of a replay and a delivery (or two replays) of one key the unique
/// (scope, event_id) index lets one insert and shows the other a duplicate
/// (PostgreSQL makes the second wait for the first's commit; SQLite runs
/// one writer). Locks are taken in a delivery's order, the new intent
/// first, then the original's row (which only a replay or an operator
/// action of that one event takes), then what the decision takes.
pub async fn rekey(
    store: &Store,
    replay: &Replay<'_>,
    original: &str,
) -> Result<Option<Outcome>, StoreError> {
    match rekey_once(store, replay, original).await {
        // Once, as for a delivery: the racing insert of the key has
        // committed (see the error's doc), so the key is found stored.
        Err(error) if error.lost_first_delivery_race() => rekey_once(store, replay, original).await,
        answer => answer,
    }
}

async fn rekey_once(
    store: &Store,
    replay: &Replay<'_>,
    original: &str,
) -> Result<Option<Outcome>, StoreError> {
    let Replay {
        source,
        event,
        stored,
        from,
        now,
        ..
    } = *replay;
    let (body, sha256) = event_payload(event, stored);
    let intent = new_intent(source, event, stored, (body, &sha256));
    let mut tx = store.begin().await?;
    let keys = keys::of_events([(source.scope.as_str(), event)]);
    tx.lock_intent_keys(source.name.as_str(), original, keys)
        .await?;
    let intent_id = match tx.insert_intent(&intent).await? {
        IntentUpsert::Duplicate { status, .. } => {
            tx.rollback().await?;
            return Ok(Some(outcome(event, Decided::status(status), true)));
        }
        IntentUpsert::Inserted { intent_id } => intent_id,
    };
    let key = event.event_id.as_str();
    let reason = format!("replayed as {key}: with the current config its payload maps to that key");
    let mark = ReplayedInto {
        source: source.name.as_str(),
        event_id: original,
        from,
        reason: &reason,
        into: key,
        into_intent_id: intent_id,
    };
    if !tx.mark_replayed_into(&mark).await? {
        tx.rollback().await?;
        return Ok(None);
    }
    let decided = decide_new(&mut tx, source, event, intent_id, now).await?;
    let detail = format!(
        "replayed with the current config as {key}: now ignored, {key} {}",
        decided.status
    );
    audit(&mut tx, replay, original, &detail).await?;
    tx.commit().await?;
    Ok(Some(outcome(event, decided, false)))
}

async fn audit(
    tx: &mut WriteTx,
    replay: &Replay<'_>,
    event_id: &str,
    detail: &str,
) -> Result<(), StoreError> {
    tx.insert_audit(&NewAudit {
        action: "replay",
        source: replay.source.name.as_str(),
        event_id: Some(event_id),
        account_id: None,
        previous_status: replay.from,
        actor: replay.actor,
        note: replay.note,
        detail: Some(detail),
        created_at: replay.now,
    })
    .await
    .map(drop)
}

fn outcome(event: &NormalisedEvent, decided: Decided, duplicate: bool) -> Outcome {
    Outcome {
        event_id: event.event_id.clone(),
        status: decided.status,
        duplicate,
        conflict: false,
        late: decided.late,
        released: decided.released,
        backlog: decided.backlog,
    }
}
