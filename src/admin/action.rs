//! Every operator action the admin offers, whichever way it comes (a page's
//! form, the JSON API, the held queue's bulk form): the call into
//! `operator`, `replay` or the store, which write the action's audit row in
//! the action's own transaction, and the action's log line once it is done.
//! Handlers read the request before and say the outcome after; none calls
//! an action, or logs one, by itself.

use crate::context::Context;
use crate::domain::{NegativeBalance, OrderingPolicy, Ranges, Status};
use crate::http::ApiError;
use crate::operator::{
    self, Action, ActionOutcome, OperatorError, ResetOutcome, ResetRequest, SkipOutcome,
    SkipRequest,
};
use crate::replay::{Asked, ReplayError, Stored, replay as rerun};

/// Who acts on an event, why, and the status they saw.
pub struct Asking<'a> {
    pub actor: &'a str,
    pub note: Option<&'a str>,
    /// The status the page showed (or the API caller says it saw): the
    /// action starts only from it.
    pub seen: Option<Status>,
}

/// Whose rule decides whether an apply may take a balance below zero.
#[derive(Clone, Copy)]
enum Overdraft {
    /// A person applies this one event: a refund the provider has paid out
    /// must be postable.
    Allow,
    /// Events the person did not each open: the source's own policy, as
    /// for a guard reset.
    SourcePolicy,
}

/// Apply or dismiss, the call alone: the operator's transaction writes the
/// event's new status and its audit row together.
async fn operate(
    context: &Context,
    action: Action,
    source: &str,
    event_id: &str,
    asking: &Asking<'_>,
    overdraft: Overdraft,
) -> Result<ActionOutcome, OperatorError> {
    let configured = context.source(source).map(|s| s.as_ref());
    let negative_balance = match overdraft {
        Overdraft::Allow => NegativeBalance::Allow,
        Overdraft::SourcePolicy => {
            configured.map_or(NegativeBalance::Allow, |s| s.negative_balance)
        }
    };
    let request = operator::Request {
        action,
        source,
        configured,
        event_id,
        actor: asking.actor,
        note: asking.note,
        seen: asking.seen,
        negative_balance,
        now: context.clock.now(),
    };
    operator::act(&context.store, &request).await
}

/// Apply or dismiss one event a person opened (its page, or the API), and
/// log it once it is done.
pub async fn act(
    context: &Context,
    action: Action,
    source: &str,
    event_id: &str,
    asking: &Asking<'_>,
) -> Result<ActionOutcome, OperatorError> {
    let outcome = operate(context, action, source, event_id, asking, Overdraft::Allow).await?;
    tracing::info!(
        source,
        event_id,
        action = action.as_str(),
        "operator action"
    );
    Ok(outcome)
}

/// One event of a bulk action: where it is, and the status the page showed.
pub struct Picked<'a> {
    pub source: &'a str,
    pub event_id: &'a str,
    pub seen: Option<Status>,
}

/// What a bulk action did: each pick's outcome, in the order asked, and how
/// many were done.
pub struct Many {
    pub results: Vec<Result<ActionOutcome, OperatorError>>,
    pub done: usize,
}

/// Apply or dismiss many events, one at a time, each in its own
/// transaction; an event refused is left as it was and the others go on.
/// One log line for the whole, after the last.
pub async fn act_on_many(
    context: &Context,
    action: Action,
    picks: &[Picked<'_>],
    actor: &str,
    note: &str,
) -> Many {
    let mut results = Vec::new();
    let mut done = 0;
    for pick in picks {
        let asking = Asking {
            actor,
            note: Some(note),
            seen: pick.seen,
        };
        let result = operate(
            context,
            action,
            pick.source,
            pick.event_id,
            &asking,
            Overdraft::SourcePolicy,
        )
        .await;
        if result.is_ok() {
            done += 1;
        }
        results.push(result);
    }
    tracing::info!(
        action = action.as_str(),
        done,
        asked = picks.len(),
        "bulk operator action"
    );
    Many { results, done }
}

/// What a replay did: the event's status before and after, and whether it
/// changed anything.
pub struct Replayed {
    pub previous_status: Status,
    pub status: Status,
    pub changed: bool,
    /// Where the current config maps the payload to another key: that key,
    /// its status, and whether it was stored already (nothing changed).
    pub replayed_as: Option<(String, Status, bool)>,
}

/// Replays one event with the current config (`crate::replay::replay`,
/// audited under the holder's name), and logs it.
pub async fn replay(
    context: &Context,
    source_name: &str,
    event_id: &str,
    asking: &Asking<'_>,
) -> Result<Replayed, ApiError> {
    let source = context
        .source(source_name)
        .ok_or_else(|| ReplayError::Unconfigured(source_name.to_owned()))?;
    let stored = Stored::load(&context.store, source_name, event_id).await?;
    if let Some(seen) = asking.seen
        && seen != stored.status()
    {
        return Err(ApiError::Conflict(format!(
            "the event is {} now, not {seen} as the page showed; reload it",
            stored.status()
        )));
    }
    let asked = Asked {
        actor: asking.actor,
        note: asking.note,
        now: context.clock.now(),
    };
    let outcome = rerun(&context.store, source, &stored, &asked).await?;
    if outcome.as_ref().is_some_and(|o| o.backlog) {
        context.drain.wake();
    }
    tracing::info!(
        source = source_name,
        event_id,
        from = stored.status().as_str(),
        to = outcome.as_ref().map(|o| o.status.as_str()),
        "operator replay"
    );
    let replayed_as = outcome
        .as_ref()
        .filter(|o| o.event_id.as_str() != stored.event_id())
        .map(|o| (o.event_id.as_str().to_owned(), o.status, o.duplicate));
    let changed = outcome.as_ref().is_some_and(|o| !o.duplicate);
    Ok(Replayed {
        previous_status: stored.status(),
        status: match (&replayed_as, &outcome) {
            // Re-keyed: the original moves nothing under its own key now.
            (Some(_), _) if changed => Status::Ignored,
            (None, Some(outcome)) => outcome.status,
            _ => stored.status(),
        },
        changed,
        replayed_as,
    })
}

/// The operator's "skip gap": runs the action, wakes the drain task if the
/// bound left more ready, counts and logs it.
pub async fn skip_gap(
    context: &Context,
    source: &str,
    account_id: &str,
    through: i64,
    actor: &str,
    note: &str,
) -> Result<SkipOutcome, OperatorError> {
    let policy = context
        .source(source)
        .map_or_else(OrderingPolicy::default, |s| s.ordering);
    let request = SkipRequest {
        source,
        account_id,
        through,
        actor,
        note,
        on_stale: policy.on_stale,
        budget: policy.release_batch,
        now: context.clock.now(),
    };
    let outcome = operator::skip_gap(&context.store, &request).await?;
    if outcome.more {
        context.drain.wake();
    }
    let skipped: i64 = outcome
        .skipped
        .iter()
        .map(|r| r.end() - r.start() + 1)
        .sum();
    context
        .metrics
        .ordering(source, "skipped", skipped.unsigned_abs());
    context
        .metrics
        .ordering(source, "released", outcome.released);
    tracing::info!(
        source,
        account_id,
        through,
        skipped = %Ranges(&outcome.skipped),
        released = outcome.released,
        "operator skipped a gap"
    );
    Ok(outcome)
}

/// A guard reset as the operator confirmed it.
pub struct Reset<'a> {
    pub to: i64,
    pub guard_seen: i64,
    pub actor: &'a str,
    pub note: &'a str,
}

/// The operator's "reset sequence guard": runs the action, counts the
/// events it released and logs it.
pub async fn reset_guard(
    context: &Context,
    source: &str,
    account_id: &str,
    reset: &Reset<'_>,
) -> Result<ResetOutcome, OperatorError> {
    let request = ResetRequest {
        source,
        account_id,
        to: reset.to,
        guard_seen: reset.guard_seen,
        actor: reset.actor,
        note: reset.note,
        configured: context.source(source).map(|s| &**s),
        now: context.clock.now(),
    };
    let outcome = operator::reset_guard(&context.store, &request).await?;
    context
        .metrics
        .ordering(source, "released", outcome.applied.len() as u64);
    tracing::info!(
        source,
        account_id,
        guard_before = outcome.guard_before,
        to = reset.to,
        applied = outcome.applied.len(),
        still_held = outcome.still_held.len(),
        "operator reset a sequence guard"
    );
    Ok(outcome)
}

/// The outbox's "Send again": one dead (or delivered) message re-queued
/// with its id, audited on its event by the store; 409 when it is neither.
pub async fn requeue_message(
    context: &Context,
    outbox_id: i64,
    destination: &str,
    message_id: &str,
    actor: &str,
) -> Result<(), ApiError> {
    let replayed = context
        .store
        .replay_message(
            outbox_id,
            destination,
            message_id,
            actor,
            context.clock.now(),
        )
        .await?;
    if !replayed {
        return Err(ApiError::Conflict(
            "that message is not dead or delivered (already pending, or unknown)".into(),
        ));
    }
    tracing::info!(
        destination,
        message_id,
        "operator re-queued an outbox message"
    );
    Ok(())
}
