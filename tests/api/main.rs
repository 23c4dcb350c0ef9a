//! The HTTP test suite: every scenario runs through the real server, once on
//! SQLite and once on PostgreSQL (`sqlite::` and `postgres::` in test names).

#[macro_use]
mod backend;
mod browser;
mod helpers;
mod locker;
mod postgres;
mod process;
mod samples;

mod admin_api;
mod admin_page;
mod admin_queues;
mod ambiguous;
mod bad_input;
mod cli;
mod concurrency;
mod contiguous;
mod crash;
mod credits;
mod duplicates;
mod gap_skip;
mod health;
mod hostile;
mod interleavings;
mod invariants;
mod ordering;
mod ordering_load;
mod schema;
mod sign_in;
mod stripe;
