//! The anchor task: every `anchors.interval_secs` (and at start-up), takes
//! the hash chains' heads with their digest, signed with `anchors.key`
//! (`Store::anchor`), and writes a line to the log (the digest, its
//! signature, how many chains, the audit head) and, with `anchors.dir`,
//! the whole anchor as a JSON file there, for `hookledger verify
//! --against`. Every instance anchors: a copy per instance is no harm.
//! Destinations that list `audit.anchor` get the anchor in parts
//! (`store::chain::parts`), one anchor per interval whatever the number
//! of instances: the first to queue an interval's anchor sends it.

use std::sync::Arc;

use tokio::task::JoinHandle;

use crate::config::Anchors;
use crate::context::Context;
use crate::domain::MessageType;
use crate::store::Store;
use crate::store::chain::{Anchor, HEADS_PER_PART};

pub fn spawn(context: Arc<Context>, anchors: Anchors) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let key = anchors.key.as_ref().map(|key| key.expose().as_bytes());
            match context.store.anchor(context.clock.now(), key).await {
                Ok(anchor) => {
                    record(&anchor, &anchors).await;
                    queue(&context.store, &anchor, &anchors).await;
                }
                Err(error) => tracing::warn!("the chains could not be anchored: {error}"),
            }
            tokio::time::sleep(anchors.interval).await;
        }
    })
}

/// Queues the anchor's parts for every destination that lists
/// `audit.anchor`, unless another instance queued this interval's already.
async fn queue(store: &Store, anchor: &Anchor, anchors: &Anchors) {
    let routes = store.outbox().routes().clone();
    let destinations: Vec<&str> = routes.taking(MessageType::AuditAnchor).collect();
    if destinations.is_empty() {
        return;
    }
    let slot = anchor.at.timestamp() / anchors.interval.as_secs().max(1) as i64;
    let parts = anchor.parts(HEADS_PER_PART);
    let now_ms = anchor.at.timestamp_millis();
    match store
        .queue_anchor(&parts, &destinations, slot, now_ms)
        .await
    {
        Ok(queued) if !queued.is_empty() => tracing::info!(
            digest = anchor.digest,
            parts = parts.len(),
            "anchor queued for {}",
            queued.join(", ")
        ),
        Ok(_) => {}
        Err(error) => {
            tracing::warn!("the anchor could not be queued for its destinations: {error}")
        }
    }
}

async fn record(anchor: &Anchor, anchors: &Anchors) {
    tracing::info!(
        digest = anchor.digest,
        signature = anchor.signature.as_deref().unwrap_or("unsigned"),
        chains = anchor.ledger.len(),
        audit_seq = anchor.audit.seq,
        audit_link = anchor.audit.link,
        "anchor of the hash chains"
    );
    let Some(dir) = &anchors.dir else {
        return;
    };
    let path = dir.join(format!(
        "anchor-{}.json",
        anchor.at.format("%Y%m%dT%H%M%SZ")
    ));
    // Whole or not at all: written aside, then renamed into place, so no
    // reader (a sync to a bucket, say) takes half a file.
    let aside = path.with_extension("json.partial");
    let written = match serde_json::to_vec_pretty(anchor) {
        Ok(text) => match tokio::fs::write(&aside, text).await {
            Ok(()) => tokio::fs::rename(&aside, &path).await,
            Err(error) => Err(error),
        },
        Err(error) => Err(std::io::Error::other(error)),
    };
    if let Err(error) = written {
        tracing::warn!(
            "the anchor could not be written to {}: {error}",
            path.display()
        );
    }
}
