//! A release's plan, pure: from the guard over the parked events (lowest
//! sequence first), late events first, then every event contiguous with
//! the guard, passing over gaps only as far as an operator allowed.

use std::ops::RangeInclusive;

use crate::store::Parked;

/// What to do at a gap (a missing number before the next parked event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gaps {
    /// Stop: the missing event may still arrive.
    Wait,
    /// An operator's decision: skip missing numbers up to and including
    /// this one (those the operator saw); stop at a gap beyond it.
    SkipThrough(i64),
}

/// One step of a planned release.
#[derive(Debug, Clone)]
pub(crate) enum Step<'a> {
    /// The guard passed this number already: a late event.
    Late(&'a Parked),
    /// Skip these missing numbers (the guard moves to the range's end).
    Skip(RangeInclusive<i64>),
    /// The next number: apply it (the guard moves to it).
    Apply(&'a Parked),
}

/// The steps a release takes from `guard` over `parked` (lowest sequence
/// first): late events first, then every event contiguous with the guard,
/// passing over gaps only as far as `gaps` allows.
pub(crate) fn plan(guard: i64, parked: &[Parked], gaps: Gaps) -> Vec<Step<'_>> {
    let mut steps = Vec::new();
    let mut guard = guard;
    for event in parked {
        let sequence = event.event_sequence;
        if sequence <= guard {
            steps.push(Step::Late(event));
            continue;
        }
        if sequence > guard + 1 {
            let gap = guard + 1..=sequence - 1;
            match gaps {
                Gaps::SkipThrough(through) if *gap.end() <= through => steps.push(Step::Skip(gap)),
                _ => break,
            }
        }
        steps.push(Step::Apply(event));
        guard = sequence;
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parked(sequences: &[i64]) -> Vec<Parked> {
        sequences
            .iter()
            .map(|&s| Parked {
                intent_id: s,
                event_id: format!("e{s}"),
                event_sequence: s,
                currency: "USD".into(),
                amount_minor: 1,
                object_id: None,
            })
            .collect()
    }

    fn describe(steps: &[Step<'_>]) -> Vec<String> {
        steps
            .iter()
            .map(|step| match step {
                Step::Late(e) => format!("late {}", e.event_sequence),
                Step::Skip(r) => format!("skip {}-{}", r.start(), r.end()),
                Step::Apply(e) => format!("apply {}", e.event_sequence),
            })
            .collect()
    }

    #[test]
    fn a_release_applies_what_is_contiguous_and_stops_at_a_gap() {
        let events = parked(&[4, 5, 7]);
        assert_eq!(
            describe(&plan(3, &events, Gaps::Wait)),
            ["apply 4", "apply 5"]
        );
        assert!(plan(2, &events, Gaps::Wait).is_empty());
    }

    #[test]
    fn a_skip_passes_only_the_gaps_the_operator_confirmed() {
        let events = parked(&[3, 4, 7, 12]);
        assert_eq!(
            describe(&plan(1, &events, Gaps::SkipThrough(6))),
            ["skip 2-2", "apply 3", "apply 4", "skip 5-6", "apply 7"]
        );
        assert_eq!(
            describe(&plan(1, &events, Gaps::SkipThrough(5))),
            ["skip 2-2", "apply 3", "apply 4"],
            "5-6 is only partly confirmed"
        );
        assert!(plan(1, &events, Gaps::SkipThrough(1)).is_empty());
    }

    #[test]
    fn events_the_guard_passed_are_late_whatever_the_gaps() {
        let events = parked(&[2, 5, 9]);
        assert_eq!(
            describe(&plan(5, &events, Gaps::Wait)),
            ["late 2", "late 5"]
        );
    }
}
