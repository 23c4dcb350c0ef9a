//! Messages of destinations this instance's config does not name: a
//! destination removed, or renamed, with messages not yet delivered. No
//! relay sends them; they are shown (the dashboard, `/admin/api/outbox`, a
//! warning at start) until the destination is configured again or the
//! messages are moved to the one that replaced it (`hookledger outbox
//! move`).

use crate::store::{Holding, Store, StoreError};

/// The destinations holding pending or dead messages that the routes do
/// not name, by name.
pub async fn unconfigured(store: &Store) -> Result<Vec<Holding>, StoreError> {
    let routes = store.outbox().routes();
    let mut holding = store.destinations_holding().await?;
    holding.retain(|h| !routes.iter().any(|r| r.destination == h.destination));
    Ok(holding)
}

/// At start: one warning per such destination (a failure to look is a
/// warning too; the dashboard shows them later).
pub async fn warn_of_unconfigured(store: &Store) {
    match unconfigured(store).await {
        Ok(holding) => {
            for h in holding {
                tracing::warn!(
                    destination = %h.destination,
                    pending = h.pending,
                    dead = h.dead,
                    "outbox: messages for a destination the config does not name are not \
                     sent: configure it again, or move them with \
                     `hookledger outbox move --from {} --to <destination>`",
                    h.destination
                );
            }
        }
        Err(error) => tracing::warn!("outbox: cannot look for unconfigured destinations: {error}"),
    }
}
