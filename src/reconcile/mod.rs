//! Reconcile (docs/operating/reconcile.md): a payment whose
//! webhook never arrived (the endpoint down past the provider's retries, a
//! secret rotated wrong, the event never generated) is found in the
//! provider's own records and credited once. A run reads the provider's
//! events (`feed`, one file per provider) over its API (`provider_api`) and pushes
//! each the source maps through the same ingest as a webhook delivery
//! (`run`): what is stored already is a duplicate, what is not is
//! recovered, with `origin = reconcile`.

mod feed;
mod paddle;
mod paypal;
mod registry;
mod run;
mod shopify;
mod square;
mod state;
mod stripe;

pub use crate::provider_api::ApiError;
pub use registry::feed_for;
pub use run::{OVERLAP, ReconcileError, Request, Summary, run};
pub use state::{State, states};
