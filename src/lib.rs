//! hookledger: a payment-webhook receiver that turns at-least-once delivery
//! into an exactly-once, sequence-guarded effect on balances.
#![forbid(unsafe_code)]

pub mod admin;
pub mod app;
pub mod background;
pub mod cli;
pub mod clock;
pub mod config;
pub mod context;
pub mod domain;
pub mod failures;
pub mod fuzzing;
pub mod http;
pub mod ingest;
pub mod ledger_check;
pub mod lifecycle;
pub mod net;
pub mod operator;
pub mod outbox;
pub mod provider_api;
pub mod providers;
pub mod receive;
pub mod reconcile;
pub mod replay;
pub mod rng;
pub mod secret;
pub mod server;
pub mod session;
pub mod source;
pub mod startup;
pub mod store;
pub mod telemetry;
pub mod thin;
pub mod tls;
