//! The keys an event's decision may touch (`store::WriteKeys`), taken by
//! every transaction that decides events before it decides the first.

use crate::domain::{Link, Movement, NormalisedEvent};
use crate::store::WriteKeys;

/// Adds what deciding `event` in `scope` may touch: its intent (by its own
/// key: two deliveries of one event may map to different accounts, from
/// two sources sharing a scope or a body that changed), its account, and
/// the payment it credits or reverses (with the account that payment was
/// credited to, which a reversal posts to).
fn add_event(keys: &mut WriteKeys, scope: &str, event: &NormalisedEvent) {
    keys.event(scope, event.event_id.as_str());
    match &event.movement {
        Movement::None => {}
        Movement::Rejected(rejection) => {
            if let Some(account) = &rejection.account {
                keys.account(account.as_str());
            }
        }
        Movement::Post(posting) => {
            keys.account(posting.account.as_str());
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
