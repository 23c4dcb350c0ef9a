//! The turn to write SQLite, taken in arrival order in-process. SQLite lets one
//! connection write at a time; pooled connections that collide on
//! `BEGIN IMMEDIATE` wait in SQLite's busy handler, which sleeps for up to
//! 100 ms between tries and serves no one in order: under load a few
//! writers wait far longer than the rest (the p99 in BENCHMARKS.md). Taking
//! a turn here first queues writers in arrival order (tokio's semaphore is
//! fair) and wakes each the moment the previous one commits. The busy
//! timeout stays as the bound across processes (a second instance, or
//! `hookledger backup`, on the same file).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::StoreError;

#[derive(Debug, Clone)]
pub struct WriteTurns {
    turn: Arc<Semaphore>,
    /// How long a writer waits for its turn: the busy timeout, as before.
    wait: Duration,
}

/// The turn to write, held until the write ends (commit, rollback or drop).
pub type WriteTurn = OwnedSemaphorePermit;

impl WriteTurns {
    pub fn new(wait: Duration) -> Self {
        Self {
            turn: Arc::new(Semaphore::new(1)),
            wait,
        }
    }

    /// Waits for the turn to write; a wait beyond the busy timeout is the
    /// same transient failure as SQLite's BUSY (503, retried by providers).
    pub async fn turn(&self) -> Result<WriteTurn, StoreError> {
        match tokio::time::timeout(self.wait, self.turn.clone().acquire_owned()).await {
            Ok(Ok(turn)) => Ok(turn),
            Ok(Err(_closed)) => Err(StoreError::Unavailable(sqlx::Error::PoolClosed)),
            Err(_elapsed) => Err(StoreError::Unavailable(sqlx::Error::PoolTimedOut)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn writers_take_turns_in_arrival_order() {
        let writer = WriteTurns::new(Duration::from_secs(5));
        let first = writer.turn().await.unwrap();
        let (order, mut seen) = tokio::sync::mpsc::unbounded_channel();
        for n in 0..3 {
            let (writer, order) = (writer.clone(), order.clone());
            tokio::spawn(async move {
                let _turn = writer.turn().await.unwrap();
                order.send(n).unwrap();
            });
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(
            seen.try_recv().is_err(),
            "a writer went while the turn was held"
        );
        drop(first);
        for n in 0..3 {
            assert_eq!(seen.recv().await.unwrap(), n);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_beyond_the_busy_timeout_is_transient() {
        let writer = WriteTurns::new(Duration::from_secs(5));
        let _held = writer.turn().await.unwrap();
        let error = writer.turn().await.unwrap_err();
        assert!(error.is_transient(), "{error}");
    }
}
