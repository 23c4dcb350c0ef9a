//! When a failed message is tried again: exponential backoff with full
//! jitter (a uniformly random wait up to a ceiling that doubles with each
//! attempt, 1 s after the first, at most 12 hours), so a destination that
//! comes back is not met by every message at once. With the default 25
//! attempts the ceilings add up to about 5.3 days and the expected waits to
//! about 2.6. A `Retry-After` the destination sent is honoured up to the
//! same 12-hour cap.

use std::time::Duration;

use crate::rng::SplitMix64;

/// The ceiling's cap.
pub const CAP: Duration = Duration::from_secs(12 * 3600);
/// No retry sooner than this, whatever the jitter drew.
const FLOOR: Duration = Duration::from_millis(250);

/// The ceiling for the wait after the `attempts`-th attempt failed.
pub fn ceiling(attempts: i64) -> Duration {
    let doublings = attempts.clamp(1, 40) - 1;
    Duration::from_secs(1u64 << doublings.min(20)).min(CAP)
}

/// The wait after the `attempts`-th attempt failed.
pub fn delay(attempts: i64, retry_after: Option<Duration>, rng: &mut SplitMix64) -> Duration {
    if let Some(asked) = retry_after {
        return asked.clamp(FLOOR, CAP);
    }
    let ceiling = ceiling(attempts).as_millis() as u64;
    Duration::from_millis(rng.next_u64() % (ceiling + 1)).max(FLOOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ceiling_doubles_up_to_the_cap() {
        assert_eq!(ceiling(1), Duration::from_secs(1));
        assert_eq!(ceiling(2), Duration::from_secs(2));
        assert_eq!(ceiling(11), Duration::from_secs(1024));
        assert_eq!(ceiling(17), CAP);
        assert_eq!(ceiling(1000), CAP);
        let total: Duration = (1..=25).map(ceiling).sum();
        assert!(total > Duration::from_secs(4 * 86_400) && total < Duration::from_secs(6 * 86_400));
    }

    #[test]
    fn waits_are_jittered_within_the_ceiling_and_retry_after_is_capped() {
        let mut rng = SplitMix64::new(7);
        let waits: Vec<_> = (0..200).map(|_| delay(6, None, &mut rng)).collect();
        assert!(
            waits
                .iter()
                .all(|w| *w >= FLOOR && *w <= Duration::from_secs(32))
        );
        assert!(waits.iter().any(|w| *w < Duration::from_secs(8)));
        assert!(waits.iter().any(|w| *w > Duration::from_secs(24)));
        let asked = Some(Duration::from_secs(90));
        assert_eq!(delay(1, asked, &mut rng), Duration::from_secs(90));
        let too_long = Some(Duration::from_secs(10 * 86_400));
        assert_eq!(delay(1, too_long, &mut rng), CAP);
    }
}
