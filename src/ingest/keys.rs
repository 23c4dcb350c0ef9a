//! The keys an event's decision may touch (`store::WriteKeys`), taken by
//! every transaction that decides events before it decides the first.

use crate::domain::{Link, Movement, NormalisedEvent, Rejection};
use crate::store::WriteKeys;

/// Adds what deciding `event` in `scope` may touch: its intent, its
/// account, and the payment it credits or reverses (with the account that
/// payment was credited to, which a reversal posts to). The intent is
/// covered by the account or payment key where the event names one (every
/// delivery of it does), and by its own key where it names neither.
pub(crate) fn add_event(keys: &mut WriteKeys, scope: &str, event: &NormalisedEvent) {
    let id = event.event_id.as_str();
    match &event.movement {
        Movement::None | Movement::Rejected(Rejection { account: None, .. }) => {
            keys.event(scope, id);
        }
        Movement::Rejected(Rejection {
            account: Some(account),
            ..
        }) => {
            keys.stored(scope, id).account(account.as_str());
        }
        Movement::Post(posting) => {
            keys.stored(scope, id).account(posting.account.as_str());
            match &posting.link {
                Link::None => {}
                Link::Pays(payment) | Link::PaysPart(payment) => {
                    keys.payment(scope, payment);
                }
                Link::Reverses(reversal) => {
                    keys.payment(scope, &reversal.payment_ref);
                }
            }
        }
        Movement::Reverse(request) => {
            keys.stored(scope, id);
            if let Some(account) = &request.account {
                keys.account(account.as_str());
            }
            keys.payment(scope, &request.reversal.payment_ref);
        }
    }
}

/// The keys of `events`, all decided in one transaction in `scope`.
pub(crate) fn of_events<'a>(
    events: impl IntoIterator<Item = (&'a str, &'a NormalisedEvent)>,
) -> WriteKeys {
    let mut keys = WriteKeys::new();
    for (scope, event) in events {
        add_event(&mut keys, scope, event);
    }
    keys
}
