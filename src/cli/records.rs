//! The commands that check the records: `check` (the ledger's
//! invariants), `verify [--against FILE...]` (every hash chain walked and,
//! with anchors, the database checked against each) and `anchor`. A file
//! given to `--against` is a whole anchor (`anchors.dir`, `hookledger
//! anchor`) or one part of an anchor as an `audit.anchor` message delivered
//! it; parts are joined by their digest, and an anchor given in part is
//! refused.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::error::CliError;
use crate::config::Config;
use crate::startup::{StartupError, connect_store};
use crate::store::chain::{Anchor, AnchorPart, PART_TYPE};

/// Walks every chain once (after migrating, as `check`); with anchors,
/// checks each too.
pub async fn verify(config: Config, against: Vec<PathBuf>) -> Result<(), CliError> {
    let key = config.anchors.key.as_ref().map(|k| k.expose().as_bytes());
    let anchors = read_anchors(&against)?;
    for (anchor, named) in &anchors {
        anchor
            .check(key)
            .map_err(|e| CliError::Init(format!("{named}: {e}")))?;
    }
    let store = migrated(&config).await?;
    let mut report = store.verify_chains().await.map_err(CliError::Check)?;
    for (anchor, _) in &anchors {
        let rewritten = store.check_anchor(anchor).await.map_err(CliError::Check)?;
        report.breaks.extend(rewritten);
    }
    let found = report.breaks.len();
    let text = serde_json::json!({"ok": found == 0, "report": report});
    answer(&text, found, CliError::Broken)
}

/// Migrates first (as `serve` does, so a new database checks clean), then
/// runs the check once.
pub async fn check(config: Config) -> Result<(), CliError> {
    let store = migrated(&config).await?;
    let violations = store.check_invariants().await.map_err(CliError::Check)?;
    let found = violations.len();
    let report = serde_json::json!({"ok": found == 0, "violations": violations});
    answer(&report, found, CliError::Violations)
}

/// An anchor of the chains now, on stdout.
pub async fn anchor(config: Config) -> Result<(), CliError> {
    let store = migrated(&config).await?;
    let key = config.anchors.key.as_ref().map(|k| k.expose().as_bytes());
    let anchor = store
        .anchor(chrono::Utc::now(), key)
        .await
        .map_err(CliError::Check)?;
    let text = serde_json::to_string_pretty(&anchor).map_err(|e| CliError::Init(e.to_string()))?;
    println!("{text}");
    Ok(())
}

async fn migrated(config: &Config) -> Result<crate::store::Store, CliError> {
    let store = connect_store(config).await.map_err(StartupError::from)?;
    store.migrate().await.map_err(StartupError::from)?;
    Ok(store)
}

/// Prints `report`; an error (exit 1) naming `found` if it found any.
fn answer(
    report: &serde_json::Value,
    found: usize,
    error: fn(usize) -> CliError,
) -> Result<(), CliError> {
    println!("{report:#}");
    match found {
        0 => Ok(()),
        found => Err(error(found)),
    }
}

/// The anchors in `paths`, each with what names it in an error: whole
/// ones as they are, parts joined by their anchor's digest.
fn read_anchors(paths: &[PathBuf]) -> Result<Vec<(Anchor, String)>, CliError> {
    let mut anchors = Vec::new();
    let mut parts: BTreeMap<String, Vec<AnchorPart>> = BTreeMap::new();
    for path in paths {
        let named = path.display().to_string();
        let text = std::fs::read(path).map_err(|e| CliError::Init(format!("{named}: {e}")))?;
        let value: serde_json::Value = serde_json::from_slice(&text)
            .map_err(|e| CliError::Init(format!("{named}: not JSON: {e}")))?;
        let not_one = |e: serde_json::Error| CliError::Init(format!("{named}: not an anchor: {e}"));
        if value.get("type").and_then(|t| t.as_str()) == Some(PART_TYPE) {
            let part: AnchorPart = serde_json::from_value(value).map_err(not_one)?;
            parts.entry(part.digest.clone()).or_default().push(part);
        } else {
            anchors.push((serde_json::from_value(value).map_err(not_one)?, named));
        }
    }
    for (digest, parts) in parts {
        let named = format!("the parts of anchor {digest}");
        let anchor = Anchor::join(parts).map_err(CliError::Init)?;
        anchors.push((anchor, named));
    }
    Ok(anchors)
}
