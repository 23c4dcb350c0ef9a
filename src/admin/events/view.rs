//! The event page's view: every stored field, the payload exactly as
//! received (and pretty-printed beside it), the ledger entry the event
//! produced, what an apply would do to the balance, and the reason it is
//! where it is, kept apart from a reason it was held for earlier.

use crate::admin::target::{event_action_href, event_href, gap_href};
use crate::admin::view::{EventView, minor_units, money, reason_is_current, time};
use crate::store::{EventDetailRow, EventRow, LedgerEntryRow};

pub struct EventDetailView {
    pub summary: EventView,
    pub fields: Vec<(&'static str, String)>,
    /// The headers the source's scheme read on the first delivery.
    pub headers: Vec<(String, String)>,
    /// The stored bytes as text, exactly as received: what the SHA-256 and
    /// the signature were computed over.
    pub payload: String,
    /// The same, pretty-printed, when it is JSON that reads differently.
    pub payload_pretty: Option<String>,
    /// A `duplicate_effect`'s crediting event: (event id, page).
    pub credited_by: Option<(String, String)>,
    /// A re-keyed replay's two rows: the key this event's payload was
    /// applied under, and the event this one was replayed from, each
    /// (event id, page).
    pub replayed_into: Option<(String, String)>,
    pub replayed_from: Option<(String, String)>,
    pub held: bool,
    pub can_apply: bool,
    /// For a waiting event: its account's gap page.
    pub gap_href: Option<String>,
    pub apply_href: String,
    pub dismiss_href: String,
    /// Why the event is in its status now (held, rejected, ignored, ...).
    pub reason_now: String,
    /// Why it was held before it was applied or dismissed.
    pub earlier_reason: Option<String>,
    pub entry: Option<EntryView>,
    /// For an event an apply would post: `$12.00 → $13.50`.
    pub preview: Option<String>,
    /// For a rejected or ignored event: what a replay with the current
    /// config would do, and whether it would change anything.
    pub replay: Option<super::replay::Preview>,
    /// A held event a replay would change: Replay is in the resolve form,
    /// beside Dismiss, under its one note.
    pub replay_in_form: bool,
    pub replay_href: String,
}

/// The ledger entry an event produced.
pub struct EntryView {
    pub entry_id: i64,
    pub amount: String,
    pub amount_minor: String,
    pub balance_after: String,
    pub account_seq: i64,
    pub operator_applied: bool,
    pub at: String,
}

impl From<LedgerEntryRow> for EntryView {
    fn from(row: LedgerEntryRow) -> Self {
        let currency = Some(row.currency.as_str());
        Self {
            entry_id: row.entry_id,
            amount: money(Some(row.amount_minor), currency),
            amount_minor: minor_units(Some(row.amount_minor), currency),
            balance_after: money(Some(row.balance_after_minor), currency),
            account_seq: row.account_seq,
            operator_applied: row.operator_applied,
            at: time(row.created_at),
        }
    }
}

/// What the event page shows besides the stored row.
pub struct Context {
    pub entry: Option<LedgerEntryRow>,
    /// The account's balance in the event's currency now (`None`: none yet).
    pub balance_minor: Option<i64>,
    /// For an ignored event without a stored reason: the types its source
    /// maps.
    pub ignored_because: Option<String>,
    pub replay: Option<super::replay::Preview>,
}

impl EventDetailView {
    pub fn new(row: EventDetailRow, context: Context) -> Self {
        let (payload, payload_pretty) = payload(&row);
        let headers = row.signature_headers();
        let fields = fields(&row);
        let credited_by = row
            .credited_by_source
            .as_deref()
            .zip(row.credited_by_event.as_deref())
            .map(|(source, event_id)| (event_id.to_owned(), event_href(source, event_id)));
        let event = row.event;
        let linked = |event_id: &Option<String>| {
            event_id
                .as_deref()
                .map(|id| (id.to_owned(), event_href(&event.source, id)))
        };
        let (replayed_into, replayed_from) =
            (linked(&row.replayed_into), linked(&row.replayed_from));
        let gap_href = (event.status == "waiting").then(|| {
            gap_href(
                &event.source,
                event.account_id.as_deref().unwrap_or_default(),
            )
        });
        let apply_href = event_action_href(&event.source, &event.event_id, "apply");
        let dismiss_href = event_action_href(&event.source, &event.event_id, "dismiss");
        let replay_href = event_action_href(&event.source, &event.event_id, "replay");
        let can_apply = event.status == "stale";
        let preview = can_apply
            .then(|| apply_preview(&event, context.balance_minor))
            .flatten();
        let would_change = context.replay.as_ref().is_some_and(|r| r.would_change);
        let (reason_now, earlier_reason) = reasons(&event, would_change, context.ignored_because);
        let held = ["stale", "rejected", "waiting"].contains(&event.status.as_str());
        let replay_in_form = held && would_change;
        let mut summary = EventView::from(event);
        summary.reason = reason_now.clone();
        Self {
            held,
            can_apply,
            credited_by,
            replayed_into,
            replayed_from,
            gap_href,
            apply_href,
            dismiss_href,
            summary,
            fields,
            headers,
            payload,
            payload_pretty,
            reason_now,
            earlier_reason,
            entry: context.entry.map(EntryView::from),
            preview,
            replay: context.replay,
            replay_in_form,
            replay_href,
        }
    }
}

/// The stored fields the page lists, in order.
fn fields(row: &EventDetailRow) -> Vec<(&'static str, String)> {
    let optional = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let event = &row.event;
    let signed_at = row
        .signed_at
        .map(|at| signed_time(at, event.first_received_at));
    let mut fields = vec![
        ("Origin", origin(&event.origin)),
        ("Sequence", optional(event.sequence.map(|s| s.to_string()))),
        ("Scope", event.scope.clone()),
        ("Object id", optional(event.object_id.clone())),
        ("Payment", optional(event.payment_ref.clone())),
        ("Occurred at", optional(event.occurred_at.map(time))),
        ("First received", time(event.first_received_at)),
        ("Last received", time(event.last_received_at)),
        ("Signed at", optional(signed_at)),
        ("Payload SHA-256", event.payload_sha256.clone()),
    ];
    if event.conflicts > 0 {
        let conflicting = row
            .conflict_sha256
            .clone()
            .unwrap_or_else(|| "not recorded (received before it was kept)".into());
        fields.push(("Conflicting body SHA-256", conflicting));
    }
    fields
}

/// What an apply would do to the balance: `$12.00 → $13.50` (none where
/// the event moves no amount, or the sum would overflow).
fn apply_preview(event: &EventRow, balance_minor: Option<i64>) -> Option<String> {
    let (amount, currency) = (event.amount_minor?, event.currency.as_deref()?);
    let before = balance_minor.unwrap_or(0);
    before.checked_add(amount).map(|after| {
        format!(
            "{} → {}",
            money(Some(before), Some(currency)),
            money(Some(after), Some(currency))
        )
    })
}

/// Why the event is in its status now, and why it was held before it was
/// applied or dismissed (a stored reason is one or the other).
fn reasons(
    event: &EventRow,
    replay_would_change: bool,
    ignored_because: Option<String>,
) -> (String, Option<String>) {
    let stored_reason = event.reason.clone().filter(|r| !r.is_empty());
    let current = reason_is_current(&event.status);
    let reason_now = match (current, &stored_reason) {
        (true, Some(reason)) => reason.clone(),
        // Ignored under the config it arrived with, mapped by today's:
        // the replay says what it would do.
        (true, None) if event.status == "ignored" && replay_would_change => {
            "its source mapped no money movement for it when it arrived; the current config does (see Replay)".to_owned()
        }
        (true, None) if event.status == "ignored" => ignored_because.unwrap_or_default(),
        _ => String::new(),
    };
    (reason_now, stored_reason.filter(|_| !current))
}

/// The notice after an action on the event page (`done` in the query):
/// what it did, in money where it posted.
pub fn done_notice(
    done: Option<&str>,
    status: &str,
    entry: Option<&LedgerEntryRow>,
) -> Option<String> {
    match (done, entry) {
        (Some("apply"), Some(entry)) => Some(format!(
            "Applied: {} to {}; its balance is now {}.",
            money(Some(entry.amount_minor), Some(&entry.currency)),
            entry.account_id,
            money(Some(entry.balance_after_minor), Some(&entry.currency)),
        )),
        (Some("dismiss"), _) => Some("Dismissed: the event will not be applied.".to_owned()),
        (Some("replay"), entry) => Some(super::replay::done(status, entry)),
        (Some("replay_unchanged"), _) => {
            Some("Not replayed: the current config maps this event as it is stored.".to_owned())
        }
        (Some("replay_duplicate"), _) => Some(
            "Not replayed: the current config maps this event to another key, which is stored \
             already; nothing changed."
                .to_owned(),
        ),
        _ => None,
    }
}

/// A signed time and how far it was from the first receipt.
fn signed_time(at: i64, received: chrono::DateTime<chrono::Utc>) -> String {
    match chrono::DateTime::from_timestamp(at, 0) {
        Some(signed) => {
            let skew = received.timestamp().saturating_sub(at);
            format!("{} ({skew} s before it was received)", time(signed))
        }
        None => at.to_string(),
    }
}

/// Why a source leaves an event alone: the types it maps (its own lists
/// included), and that this one is not among them (or is, but its
/// conditions did not hold).
pub fn ignored_because(source: &crate::source::Source, event_type: &str) -> String {
    let mapped = crate::providers::mapped_types(source.provider.rules(), &source.mapping);
    if mapped.contains(&event_type) {
        format!(
            "{event_type} moves money only in some states (a refund that succeeded, say), and this one was not in them"
        )
    } else {
        format!(
            "source {} maps {}; {event_type} is not among them, so it moves no money",
            source.name.as_str(),
            mapped.join(", ")
        )
    }
}

/// The payload as received, and pretty-printed when that reads
/// differently.
fn payload(row: &EventDetailRow) -> (String, Option<String>) {
    let bytes = &row.payload;
    if let Some(at) = row.payload_purged_at {
        let gone = format!(
            "payload purged on {} (retention); its SHA-256 is kept above",
            time(at)
        );
        return (gone, None);
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            let pretty = serde_json::from_str::<serde_json::Value>(text)
                .and_then(|v| serde_json::to_string_pretty(&v))
                .ok()
                .filter(|pretty| pretty != text);
            (text.to_owned(), pretty)
        }
        Err(_) => (
            format!(
                "(not UTF-8: {} bytes, base64 below)\n{}",
                bytes.len(),
                row.payload_base64.as_deref().unwrap_or_default()
            ),
            None,
        ),
    }
}

/// Where the event came from, for people.
fn origin(origin: &str) -> String {
    match origin {
        "reconcile" => {
            "reconcile: fetched from the provider's API (its webhook never arrived)".into()
        }
        _ => "webhook".into(),
    }
}
