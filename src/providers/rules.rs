//! The mapping every kind shares. A kind declares, per event type it maps, a
//! [`Rule`]: what the type does to a balance, where its amount, currency and
//! payment id are, when it moves money at all (a refund's status), and what
//! its intent key is. [`map_event`] applies the rules, with the source's own
//! overrides ([`Mapping`]: credit and debit types, paths), the same way for
//! every kind, so every kind validates accounts, currencies, amounts and
//! payment ids alike.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::fields::lookup;
use super::mapping::{MapError, Mapping};
use crate::domain::{
    AmountFormat, Basis, Direction, EventId, Movement, NormalisedEvent, PostingFields, Rejection,
    ReversalFields, payment_ref,
};

pub struct Rule {
    pub event_type: &'static str,
    pub effect: Effect,
    /// Every condition must hold for the event to move money (a refund's
    /// status `succeeded`, say); otherwise it is `ignored`.
    pub when: &'static [Condition],
    pub amount: Amount,
    /// Where the payment id is: the payment itself for a credit, the one
    /// reversed for a reversal; `""` for a movement of its own.
    pub payment: &'static str,
    /// Where the provider object the event is about is (`""`: none).
    pub object: &'static str,
    pub key: Key,
    /// Mapped only when the source lists the type in its `credit_types` or
    /// `debit_types` (an alternative to the default types, not an addition).
    pub optional: bool,
}

/// `path` holds one of `values` (a string, or a boolean written as `true`);
/// with no values, `path` holds anything but null (the body has that shape).
pub struct Condition {
    pub path: &'static str,
    pub values: &'static [&'static str],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Credits the account at the kind's account path: the payment whole,
    /// once per scope.
    Credit,
    /// Credits one part of a payment captured in parts, once per part (the
    /// rule's key names the part).
    CreditPart,
    /// Debits the account at the kind's account path (no payment).
    Debit,
    /// Takes back part of a payment's credit (refund, dispute).
    Reverse(Basis),
    /// Gives back what one earlier reversal took (a dispute won), keyed
    /// like that reversal with this prefix instead of its own.
    Reinstate { undoes: &'static str },
}

impl Effect {
    /// Credit types (`credit_types`) or debit types (`debit_types`).
    pub fn is_credit(self) -> bool {
        matches!(
            self,
            Effect::Credit | Effect::CreditPart | Effect::Reinstate { .. }
        )
    }
}

pub enum Amount {
    /// The amount and currency at these paths.
    Path {
        amount: &'static str,
        currency: &'static str,
        format: AmountFormat,
    },
    /// Computed from the event (Shopify sums a refund's transactions).
    Computed(ComputeAmount),
}

/// (amount, currency, how the amount is written), or why there is none.
pub type ComputeAmount = fn(&Value) -> Result<(Value, Value, AmountFormat), String>;

/// The intent key of an event that moves money.
pub enum Key {
    /// The provider's event id.
    EventId,
    /// `{prefix}:{value at path}`: one key per refund (say) whichever event
    /// types report it, so it debits once.
    Field {
        prefix: &'static str,
        path: &'static str,
    },
}

/// What a kind's `normalise` read from one event before the rules apply.
pub struct EventView<'a> {
    pub event_id: EventId,
    pub event_type: String,
    /// The JSON the rules' paths start at (the event, or a batch item).
    pub root: &'a Value,
    pub sequence: Result<i64, String>,
    pub explicit_sequence: bool,
    pub occurred_at: Option<DateTime<Utc>>,
}

/// The rule for `event_type` under the source's type lists: a kind rule
/// of an enabled class, or for a type the source added, the kind's first
/// rule of that class (its paths), or none.
fn rule_for<'r>(rules: &'r [Rule], event_type: &str, mapping: &Mapping) -> Option<&'r Rule> {
    let listed = |credit: bool| match (credit, &mapping.credit_types, &mapping.debit_types) {
        (true, Some(types), _) | (false, _, Some(types)) => {
            Some(types.iter().any(|t| t == event_type))
        }
        _ => None,
    };
    let own = rules.iter().find(|r| r.event_type == event_type);
    if let Some(rule) = own {
        return match listed(rule.effect.is_credit()) {
            Some(true) => Some(rule),
            Some(false) => None,
            None => (!rule.optional).then_some(rule),
        };
    }
    [true, false]
        .into_iter()
        .find(|&credit| listed(credit) == Some(true))
        .and_then(|credit| rules.iter().find(|r| r.effect.is_credit() == credit))
}

/// Every event type a source maps, under its type lists: the kind's rules
/// it enables, then the types its own lists add (which take the kind's
/// first rule of their class), each once.
pub fn mapped_types<'m>(rules: &'m [Rule], mapping: &'m Mapping) -> Vec<&'m str> {
    mapped_rules(rules, mapping)
        .into_iter()
        .map(|(event_type, _)| event_type)
        .collect()
}

/// [`mapped_types`], each with the rule it maps by.
pub fn mapped_rules<'m>(rules: &'m [Rule], mapping: &'m Mapping) -> Vec<(&'m str, &'m Rule)> {
    let listed = [&mapping.credit_types, &mapping.debit_types]
        .into_iter()
        .flatten()
        .flatten()
        .map(String::as_str);
    let mut mapped: Vec<(&str, &Rule)> = Vec::new();
    for event_type in rules.iter().map(|r| r.event_type).chain(listed) {
        if mapped.iter().any(|(t, _)| *t == event_type) {
            continue;
        }
        if let Some(rule) = rule_for(rules, event_type, mapping) {
            mapped.push((event_type, rule));
        }
    }
    mapped
}

/// The kind's rules a source maps, under its type lists.
pub fn enabled_rules<'r>(rules: &'r [Rule], mapping: &Mapping) -> Vec<&'r Rule> {
    rules
        .iter()
        .filter(|r| rule_for(rules, r.event_type, mapping).is_some_and(|f| std::ptr::eq(f, *r)))
        .collect()
}

fn holds(condition: &Condition, root: &Value) -> bool {
    let found = lookup(root, condition.path);
    if condition.values.is_empty() {
        return found.is_some_and(|v| !v.is_null());
    }
    match found {
        Some(Value::String(text)) => condition.values.contains(&text.as_str()),
        Some(Value::Bool(flag)) => condition
            .values
            .contains(&if *flag { "true" } else { "false" }),
        _ => false,
    }
}

/// Applies the kind's rules (with the source's overrides) to one event.
pub fn map_event(
    view: EventView<'_>,
    rules: &[Rule],
    mapping: &Mapping,
) -> Result<NormalisedEvent, MapError> {
    let root = view.root;
    let rule = rule_for(rules, &view.event_type, mapping)
        .filter(|rule| rule.when.iter().all(|c| holds(c, root)));
    let object = object_of(root, rule, mapping);
    let Some(rule) = rule else {
        return Ok(unmapped(view, object));
    };
    let (object_id, object_problem) = match object {
        Ok(object) => (object, None),
        Err(problem) => (None, Some(problem)),
    };
    let (event_id, key_value) = intent_key(rule, view.event_id, root)?;
    let sequence = match &mapping.sequence_path {
        Some(path) => super::fields::sequence_of(path.lookup(root), path.as_str()),
        None => view.sequence,
    };
    let (movement, object_problem) = match amount_of(rule, root, mapping) {
        Ok(found) => {
            let sequence = (sequence, view.explicit_sequence);
            let movement = movement(rule, mapping, root, &found, key_value, sequence);
            (movement, object_problem)
        }
        // The amount's reason alone: an object's problem is not added.
        Err(reason) => (no_amount(reason, sequence.ok()), None),
    };
    let mut event = NormalisedEvent {
        event_id,
        event_type: view.event_type,
        object_id,
        occurred_at: view.occurred_at,
        movement,
        payload: None,
    };
    if let Some(problem) = object_problem {
        reject_for_object(&mut event, problem);
    }
    Ok(event)
}

/// The id of the provider object the event is about, at the source's
/// object path, else the rule's: none where neither names one.
fn object_of(
    root: &Value,
    rule: Option<&Rule>,
    mapping: &Mapping,
) -> Result<Option<String>, String> {
    let object_path = match (&mapping.object_path, rule) {
        (Some(path), _) => Some(path.as_str()),
        (None, Some(rule)) if !rule.object.is_empty() => Some(rule.object),
        _ => None,
    };
    object_path
        .map(|path| object_at(root, path))
        .transpose()
        .map(Option::flatten)
}

/// An event no rule maps (or whose rule's conditions do not hold): it moves
/// nothing, and is rejected only for an unreadable object id.
fn unmapped(view: EventView<'_>, object: Result<Option<String>, String>) -> NormalisedEvent {
    let mut event = NormalisedEvent {
        event_id: view.event_id,
        event_type: view.event_type,
        object_id: object.clone().ok().flatten(),
        occurred_at: view.occurred_at,
        movement: Movement::None,
        payload: None,
    };
    if let Err(problem) = object {
        event.reject_as(&problem);
    }
    event
}

/// The event's intent key under `rule`, and for a key of a field, that
/// field's value (a reinstatement keys the reversal it undoes by it).
fn intent_key(
    rule: &Rule,
    event_id: EventId,
    root: &Value,
) -> Result<(EventId, Option<String>), MapError> {
    Ok(match rule.key {
        Key::EventId => (event_id, None),
        Key::Field { prefix, path } => {
            let value =
                super::fields::id_text(lookup(root, path)).ok_or(MapError::MissingEventId(path))?;
            (EventId::parse(&format!("{prefix}:{value}"))?, Some(value))
        }
    })
}

/// The amount, currency and how the amount is written, as found.
struct Found {
    amount: Value,
    currency: Value,
    format: AmountFormat,
}

/// Where the rule finds the amount, with the source's own paths and format
/// over it; why there is none where the rule computes it and cannot.
fn amount_of(rule: &Rule, root: &Value, mapping: &Mapping) -> Result<Found, String> {
    let (amount, currency, format) = match &rule.amount {
        Amount::Path {
            amount,
            currency,
            format,
        } => (
            lookup(root, amount).cloned(),
            lookup(root, currency).cloned(),
            *format,
        ),
        Amount::Computed(compute) => compute(root).map(|(a, c, f)| (Some(a), Some(c), f))?,
    };
    let amount = match &mapping.amount_path {
        Some(path) => path.lookup(root).cloned(),
        None => amount,
    }
    .unwrap_or(Value::Null);
    let currency = match &mapping.currency_path {
        Some(path) => path.lookup(root).cloned(),
        None => currency,
    }
    .unwrap_or(Value::Null);
    Ok(Found {
        amount,
        currency,
        format: mapping.amount_format.unwrap_or(format),
    })
}

/// An event whose rule computes its amount and cannot: rejected for that.
fn no_amount(reason: String, sequence: Option<i64>) -> Movement {
    Movement::Rejected(Rejection {
        reason,
        account: None,
        currency: None,
        signed_amount: None,
        sequence,
    })
}

/// What the rule's effect does with what was found: a posting, or a
/// reversal (or reinstatement) of an earlier payment.
fn movement(
    rule: &Rule,
    mapping: &Mapping,
    root: &Value,
    found: &Found,
    key_value: Option<String>,
    (sequence, explicit_sequence): (Result<i64, String>, bool),
) -> Movement {
    let account = mapping.account_path.lookup(root);
    let effect = effect_of(rule, mapping);
    let (payment_path, payment) = payment_of(rule, effect, mapping, root);
    match effect {
        Effect::Credit | Effect::CreditPart | Effect::Debit => PostingFields {
            direction: if effect == Effect::Debit {
                Direction::Debit
            } else {
                Direction::Credit
            },
            account_path: mapping.account_path.as_str(),
            account,
            currency: Some(&found.currency),
            amount: Some(&found.amount),
            sequence,
            explicit_sequence,
            amount_format: found.format,
            payment: match payment {
                None | Some(Value::Null) => Ok(None),
                found => payment_ref(found, payment_path).map(Some),
            },
            part: effect == Effect::CreditPart,
        }
        .into_movement(),
        Effect::Reverse(basis) => ReversalFields {
            direction: Direction::Debit,
            payment_path,
            payment,
            basis,
            undoes: None,
            account,
            currency: Some(&found.currency),
            amount: Some(&found.amount),
            amount_format: found.format,
            sequence,
        }
        .into_movement(),
        Effect::Reinstate { undoes } => ReversalFields {
            direction: Direction::Credit,
            payment_path,
            payment,
            basis: Basis::Each,
            undoes: key_value.map(|value| format!("{undoes}:{value}")),
            account,
            currency: Some(&found.currency),
            amount: Some(&found.amount),
            amount_format: found.format,
            sequence,
        }
        .into_movement(),
    }
}

/// The rule's effect under the source's mapping: where the source names
/// the payment a debit reverses (`reverses_path`), its plain debits are
/// refunds of that payment, each for its own amount.
fn effect_of(rule: &Rule, mapping: &Mapping) -> Effect {
    match (rule.effect, &mapping.reverses_path) {
        (Effect::Debit, Some(_)) => Effect::Reverse(Basis::Each),
        (effect, _) => effect,
    }
}

/// Where the payment of `effect` is named, and what is there: the source's
/// own path (`payment_path` for a credit, `reverses_path` for a reversal)
/// over the rule's; no path for a movement of its own.
fn payment_of<'v>(
    rule: &'v Rule,
    effect: Effect,
    mapping: &'v Mapping,
    root: &'v Value,
) -> (&'v str, Option<&'v Value>) {
    let own = match effect {
        Effect::Credit | Effect::CreditPart => mapping.payment_path.as_ref(),
        Effect::Reverse(_) => mapping.reverses_path.as_ref(),
        Effect::Debit | Effect::Reinstate { .. } => None,
    };
    match own {
        Some(path) => (path.as_str(), path.lookup(root)),
        None if rule.payment.is_empty() => ("", None),
        None => (rule.payment, lookup(root, rule.payment)),
    }
}

/// Rejects a mapped event whose object id cannot be read, naming that
/// before any reason the event was already rejected for.
fn reject_for_object(event: &mut NormalisedEvent, problem: String) {
    let reason = match &event.movement {
        Movement::Rejected(rejection) => format!("{problem}; {}", rejection.reason),
        _ => problem,
    };
    event.reject_as(&reason);
}

/// The object id at `path`: absent or null is none; anything else must be an
/// id (a string or integer of 1-255 bytes without control characters).
fn object_at(root: &Value, path: &str) -> Result<Option<String>, String> {
    match lookup(root, path) {
        None | Some(Value::Null) => Ok(None),
        found => payment_ref(found, path)
            .map(Some)
            .map_err(|_| format!("object id at {path} must be a string or integer of 1-255 characters without control characters")),
    }
}

#[cfg(test)]
mod tests;
