//! Where a run of postings ends in a group's events (`group_commit`): the
//! longest stretch from the first that a run decides as one by one would.

use std::collections::{HashMap, HashSet};

use super::run_of_postings::{self, Effect};
use crate::domain::NormalisedEvent;
use crate::source::Source;

/// How many of `events`, from the first, make one run: postings a run may
/// hold, with no key twice (a redelivery of an event earlier in the run starts
/// the next run, where it is a duplicate as one by one), and no number of a
/// contiguous stream twice. A run inserts its intents first; one by one, an
/// event's number is held only by the events before it, so a number taken
/// twice starts the next run, where the holder check sees only the first.
/// A credit of a payment that a reversal earlier in the run names starts
/// the next run too: that reversal may wait `unmatched`, and the credit
/// would release it (the next run sees it waiting, and is decided one by
/// one). So does a reversal of a payment that a credit earlier in the run
/// pays in part, or receives at another source: a credit decided alone
/// reads the reversals waiting for its payment, and would find that
/// reversal's intent, inserted with the run's as `unmatched` (one by one
/// it has not arrived): a part (on a row credited before) applies and
/// would release it, and a credit at another source of the scope would
/// lock that reversal's source's guard on its account first
/// (`reverse::lock_release_guards`), a row one by one does not create. A
/// whole credit decided alone at the reversal's own source never applies
/// (it is held late, a second credit, or out of range) and locks nothing
/// more, so it is left in the run.
pub(super) fn run_length<'a>(
    events: &[(usize, &'a NormalisedEvent)],
    source: impl Fn(usize) -> &'a Source,
) -> usize {
    let mut keys = HashSet::new();
    let mut numbers = HashSet::new();
    let mut reversed = HashSet::new();
    // Per payment, the credits of it so far: (source, a part?).
    let mut credited: HashMap<(&str, &str), Vec<(&str, bool)>> = HashMap::new();
    events
        .iter()
        .take_while(|&&(position, event)| {
            let source = source(position);
            let Some(effect) = run_of_postings::in_run(source, event) else {
                return false;
            };
            let scope = source.scope.as_str();
            keys.insert((scope, event.event_id.as_str()))
                && match effect {
                    Effect::Post(posting) => {
                        let paid = posting.link.paid();
                        if let Some((payment, part)) = paid {
                            let by = (source.name.as_str(), part);
                            credited.entry((scope, payment)).or_default().push(by);
                        }
                        run_of_postings::stream_number(source, posting)
                            .is_none_or(|number| numbers.insert(number))
                            && paid.is_none_or(|(payment, _)| !reversed.contains(&(scope, payment)))
                    }
                    Effect::Reverse(request) => {
                        let payment = (scope, request.reversal.payment_ref.as_str());
                        reversed.insert(payment);
                        let own = source.name.as_str();
                        credited.get(&payment).is_none_or(|credits| {
                            credits.iter().all(|&(by, part)| by == own && !part)
                        })
                    }
                }
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::run_length;
    use crate::domain::{
        AccountId, Basis, Currency, Direction, EventId, Link, Movement, NormalisedEvent,
        PositiveAmount, Posting, Reversal, ReverseRequest,
    };
    use crate::source::Source;

    /// `a` and `b` of one scope, `n` numbering its events.
    fn sources() -> Vec<Source> {
        let text = r#"
database_url = "sqlite::memory:"
[[sources]]
name = "a"
kind = "standard-webhooks"
secrets = ["whsec_YWJj"]
scope = "shared"
[[sources]]
name = "b"
kind = "standard-webhooks"
secrets = ["whsec_YWJj"]
scope = "shared"
[[sources]]
name = "n"
kind = "standard-webhooks"
secrets = ["whsec_YWJj"]
ordering = "contiguous"
"#;
        crate::config::from_toml(text, &|_| None).unwrap().sources
    }

    fn event(id: &str, movement: Movement) -> NormalisedEvent {
        NormalisedEvent {
            event_id: EventId::parse(id).unwrap(),
            event_type: "t".to_owned(),
            object_id: None,
            occurred_at: None,
            movement,
            payload: None,
        }
    }

    fn post(id: &str, link: Link, sequence: i64) -> NormalisedEvent {
        event(
            id,
            Movement::Post(Posting {
                direction: Direction::Credit,
                account: AccountId::parse("acct").unwrap(),
                currency: Currency::parse("USD").unwrap(),
                amount: PositiveAmount::new(10).unwrap(),
                sequence,
                explicit_sequence: true,
                link,
            }),
        )
    }

    fn reversal(id: &str, direction: Direction) -> NormalisedEvent {
        event(
            id,
            Movement::Reverse(ReverseRequest {
                direction,
                currency: Currency::parse("USD").unwrap(),
                amount: PositiveAmount::new(5).unwrap(),
                account: None,
                sequence: 1,
                reversal: Reversal {
                    payment_ref: "pay".to_owned(),
                    basis: Basis::Each,
                    undoes: None,
                },
            }),
        )
    }

    /// The run's length over `events`, each of the source named with it.
    fn length(events: &[(&str, NormalisedEvent)]) -> usize {
        let sources = sources();
        let by_name = |name: &str| {
            sources
                .iter()
                .position(|s| s.name.as_str() == name)
                .unwrap()
        };
        let indexed: Vec<(usize, &NormalisedEvent)> = events
            .iter()
            .map(|(name, event)| (by_name(name), event))
            .collect();
        run_length(&indexed, |index| &sources[index])
    }

    fn pays() -> Link {
        Link::Pays("pay".to_owned())
    }

    #[test]
    fn a_run_ends_at_a_key_it_holds_or_an_event_it_cannot_hold() {
        let plain = |id| post(id, Link::None, 1);
        assert_eq!(length(&[("a", plain("e1")), ("b", plain("e2"))]), 2);
        // One key of the scope twice, whichever source received it.
        assert_eq!(length(&[("a", plain("e1")), ("b", plain("e1"))]), 1);
        let none = event("e3", Movement::None);
        assert_eq!(length(&[("a", plain("e1")), ("a", none)]), 1);
        // A reinstatement is decided outside runs.
        let back = reversal("e4", Direction::Credit);
        assert_eq!(length(&[("a", plain("e1")), ("a", back)]), 1);
    }

    #[test]
    fn a_run_ends_at_a_number_it_holds() {
        let numbered = |id, sequence| post(id, Link::None, sequence);
        let two = [("n", numbered("e1", 1)), ("n", numbered("e2", 2))];
        assert_eq!(length(&two), 2);
        let again = [("n", numbered("e1", 1)), ("n", numbered("e2", 1))];
        assert_eq!(length(&again), 1);
    }

    #[test]
    fn a_run_keeps_a_payment_and_its_reversals_apart_where_a_release_could_come() {
        let refund = |id| reversal(id, Direction::Debit);
        // A refund after its payment's whole credit at its own source.
        assert_eq!(
            length(&[("a", post("c", pays(), 1)), ("a", refund("r"))]),
            2
        );
        // At another source of the scope, or after a part: the run ends.
        assert_eq!(
            length(&[("a", post("c", pays(), 1)), ("b", refund("r"))]),
            1
        );
        let part = post("c", Link::PaysPart("pay".to_owned()), 1);
        assert_eq!(length(&[("a", part), ("a", refund("r"))]), 1);
        // A credit of a payment a refund before it in the run names.
        assert_eq!(
            length(&[("a", refund("r")), ("a", post("c", pays(), 1))]),
            1
        );
        // Another payment's credit stays in the run.
        let other = post("c", Link::Pays("other".to_owned()), 1);
        assert_eq!(length(&[("a", refund("r")), ("a", other)]), 2);
    }
}
