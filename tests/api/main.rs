//! The HTTP test suite: every scenario runs through the real server, once on
//! SQLite and once on PostgreSQL (`sqlite::` and `postgres::` in test names).

mod answers;
#[macro_use]
mod backend;
mod browser;
mod fixtures;
mod helpers;
mod locker;
mod pause;
mod postgres;
mod process;
mod samples;

mod admin_api;
mod admin_page;
mod admin_queues;
mod ambiguous;
mod backup;
mod bad_input;
mod bench;
mod chaos;
mod cli;
mod cli_kinds;
mod concurrency;
mod contiguous;
mod crash;
mod credits;
mod disputes;
mod dot_ids;
mod duplicates;
mod first_run;
mod gap_skip;
mod group_commit;
mod health;
mod hostile;
mod interleavings;
mod invariants;
mod kinds;
mod lock_order;
mod log_volume;
mod negative_balance;
mod once_per_payment;
mod operator_edges;
mod ordering;
mod ordering_load;
mod protocol;
mod refunds;
mod retention;
mod schema;
mod scope_merge;
mod shutdown;
mod sign_in;
mod stored;
mod stored_property;
mod stripe;
mod unreadable;
