//! The source's ordering decision for a posting: `high-water` or
//! `contiguous` (docs/ordering.md).

use super::outcome::Decided;
use super::posted::Posted;
use super::{contiguous, high_water};
use crate::domain::OrderingMode;
use crate::store::{StoreError, WriteTx};

pub(super) async fn decide(tx: &mut WriteTx, posted: &Posted<'_>) -> Result<Decided, StoreError> {
    match posted.source.ordering.mode {
        OrderingMode::HighWater => high_water::decide(tx, posted).await,
        OrderingMode::Contiguous => contiguous::decide(tx, posted).await,
    }
}
