//! The HTTP test suite: every scenario runs through the real server, once on
//! SQLite and once on PostgreSQL (`sqlite::` and `postgres::` in test names).

#[macro_use]
mod backend;
mod helpers;
mod locker;
mod postgres;

mod admin_api;
mod admin_page;
mod bad_input;
mod cli;
mod concurrency;
mod contiguous;
mod credits;
mod duplicates;
mod health;
mod invariants;
mod ordering;
mod schema;
mod stripe;
