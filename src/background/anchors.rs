//! The anchor task: every `anchors.interval_secs` (and at start-up), takes
//! the hash chains' heads with their digest, signed with `anchors.key`
//! (`Store::anchor`), and writes a line to the log (the digest, its
//! signature, how many chains, the audit head) and, with `anchors.dir`,
//! the whole anchor as a JSON file there, for `hookledger verify
//! --against`. Every instance anchors: a copy per instance is no harm.

use std::sync::Arc;

use tokio::task::JoinHandle;

use crate::config::Anchors;
use crate::context::Context;
use crate::store::chain::Anchor;

pub fn spawn(context: Arc<Context>, anchors: Anchors) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let key = anchors.key.as_ref().map(|key| key.expose().as_bytes());
            match context.store.anchor(context.clock.now(), key).await {
                Ok(anchor) => record(&anchor, &anchors).await,
                Err(error) => tracing::warn!("the chains could not be anchored: {error}"),
            }
            tokio::time::sleep(anchors.interval).await;
        }
    })
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
