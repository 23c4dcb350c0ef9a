//! After a write refused by a read-only server (`read_only`): the idle
//! connections leave the pool too, not only those taken or given back.

use super::{Store, read_only};

impl Store {
    /// After a refused write (PostgreSQL): every idle connection is taken
    /// out and given back, which closes those opened before the refusal
    /// (the pool's `after_release`). Nothing to do without a refusal, or on
    /// SQLite.
    pub fn recycle_after_refusal(&self) {
        let Store::Postgres(pool, ..) = self else {
            return;
        };
        if !read_only::any_refused() {
            return;
        }
        for _ in 0..pool.num_idle() {
            // Given back at once (its release runs in a task of sqlx's).
            drop(pool.try_acquire());
        }
    }
}
