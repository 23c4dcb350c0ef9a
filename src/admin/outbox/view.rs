//! The outbox as operators see it: per destination what is pending, in
//! flight, delivered and dead, and which accounts are blocked; per event
//! which destinations got its messages and when. Shown on the dashboard
//! and the event page, and as JSON.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::admin::target::event_href;
use crate::admin::view::{duration, time};
use crate::http::ApiError;
use crate::store::{Blocking, OutboxEntry, OutboxStats, Store};

/// Dead letters listed per destination.
const DEAD_SHOWN: i64 = 20;
/// Blocked accounts listed per ordered destination.
const BLOCKED_SHOWN: i64 = 20;

/// One destination, as the dashboard shows it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DestinationView {
    pub name: String,
    pub pending: i64,
    pub in_flight: i64,
    pub oldest_pending: String,
    pub delivered_last_hour: i64,
    pub dead: i64,
    /// Ordered destinations only.
    pub blocked_accounts: Option<i64>,
    /// The messages holding the first [`BLOCKED_SHOWN`] of them.
    pub blocked: Vec<BlockedView>,
    pub dead_letters: Vec<MessageView>,
}

/// One blocked account of an ordered destination: the message that holds
/// it back, and how many wait behind it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BlockedView {
    pub account_id: String,
    pub currency: String,
    pub account_seq: i64,
    pub event_id: String,
    pub event_href: String,
    pub message_id: String,
    /// `retrying` (on its backoff), `re-queued` (replayed, due: not tried
    /// since) or `dead`.
    pub state: &'static str,
    pub attempts: i64,
    pub last_error: String,
    pub waiting: i64,
}

impl BlockedView {
    fn new(row: Blocking) -> Self {
        Self {
            event_href: event_href(&row.source, &row.event_id),
            state: match (row.state.as_str(), row.attempts) {
                ("dead", _) => "dead",
                (_, 0) => "re-queued",
                _ => "retrying",
            },
            account_id: row.account_id.unwrap_or_default(),
            currency: row.currency.unwrap_or_default(),
            account_seq: row.account_seq,
            event_id: row.event_id,
            message_id: row.message_id,
            attempts: row.attempts,
            last_error: row.last_error,
            waiting: row.waiting,
        }
    }
}

/// One message row.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MessageView {
    /// The row, which a replay names.
    pub outbox_id: i64,
    pub destination: String,
    pub message_id: String,
    pub message_type: String,
    pub event_id: String,
    /// The event's page.
    pub event_href: String,
    pub account: String,
    pub state: String,
    pub attempts: i64,
    pub last_error: String,
    pub delivered: String,
    pub written: String,
}

impl MessageView {
    fn new(row: OutboxEntry) -> Self {
        let account = match (&row.account_id, &row.currency, row.account_seq) {
            (Some(a), Some(c), Some(seq)) => format!("{a} {c} #{seq}"),
            (Some(a), _, _) => a.clone(),
            _ => String::new(),
        };
        Self {
            delivered: row
                .delivered_ms
                .and_then(DateTime::<Utc>::from_timestamp_millis)
                .map(time)
                .unwrap_or_default(),
            written: time(row.created_at),
            event_href: event_href(&row.source, &row.event_id),
            outbox_id: row.outbox_id,
            destination: row.destination,
            message_id: row.message_id,
            message_type: row.message_type,
            event_id: row.event_id,
            account,
            state: row.state,
            attempts: row.attempts,
            last_error: row.last_error.unwrap_or_default(),
        }
    }
}

/// Every configured destination's figures and latest dead letters.
pub async fn destinations(
    store: &Store,
    now: DateTime<Utc>,
) -> Result<Vec<DestinationView>, ApiError> {
    let mut views = Vec::new();
    for route in store.outbox().routes().iter() {
        let name = &route.destination;
        let OutboxStats {
            pending,
            in_flight,
            oldest_pending_at,
            delivered_last_hour,
            dead,
            ..
        } = store.outbox_stats(name).await?;
        let (blocked_accounts, blocked) = match route.ordered {
            true => (
                Some(store.blocked_accounts(name).await?),
                store.blocking_messages(name, BLOCKED_SHOWN).await?,
            ),
            false => (None, Vec::new()),
        };
        views.push(DestinationView {
            name: name.clone(),
            pending,
            in_flight,
            oldest_pending: oldest_pending_at
                .map(|at| duration((now - at).num_seconds().max(0)))
                .unwrap_or_default(),
            delivered_last_hour,
            dead,
            blocked_accounts,
            blocked: blocked.into_iter().map(BlockedView::new).collect(),
            dead_letters: store
                .dead_letters(name, DEAD_SHOWN)
                .await?
                .into_iter()
                .map(MessageView::new)
                .collect(),
        });
    }
    Ok(views)
}

/// The messages of one event, for its page.
pub async fn event_messages(
    store: &Store,
    source: &str,
    event_id: &str,
) -> Result<Vec<MessageView>, ApiError> {
    Ok(store
        .event_messages(source, event_id)
        .await?
        .into_iter()
        .map(MessageView::new)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holding(state: &str, attempts: i64) -> Blocking {
        Blocking {
            outbox_id: 1,
            message_id: "msg_1".into(),
            source: "demo".into(),
            event_id: "evt_1".into(),
            account_id: Some("cus_1".into()),
            currency: None,
            account_seq: 3,
            state: state.into(),
            attempts,
            last_error: "answered HTTP 500".into(),
            waiting: 2,
        }
    }

    #[test]
    fn a_blocking_message_says_whether_it_is_retried_re_queued_or_dead() {
        let states: Vec<_> = [("pending", 4), ("pending", 0), ("dead", 25), ("dead", 0)]
            .into_iter()
            .map(|(state, attempts)| BlockedView::new(holding(state, attempts)).state)
            .collect();
        assert_eq!(states, ["retrying", "re-queued", "dead", "dead"]);
        let view = BlockedView::new(holding("pending", 1));
        assert_eq!(
            (view.account_id.as_str(), view.currency.as_str()),
            ("cus_1", "")
        );
    }
}
