//! Each reconciling source's state as the admin page and `/metrics` show
//! it: its sweep interval, its provider's retention, and the stored record
//! of its runs (any instance's).

use std::time::Duration;

use crate::source::Source;
use crate::store::{ReconcileRun, Store, StoreError};

pub struct State {
    pub source: String,
    /// `None`: only on demand.
    pub interval: Option<Duration>,
    /// How long the provider keeps events readable.
    pub retention: Duration,
    /// `None` before the first run.
    pub run: Option<ReconcileRun>,
}

/// One per source with `[sources.reconcile]`, by name.
pub async fn states<'a>(
    store: &Store,
    sources: impl IntoIterator<Item = &'a Source>,
) -> Result<Vec<State>, StoreError> {
    let mut states: Vec<State> = sources
        .into_iter()
        .filter_map(|source| {
            let settings = source.reconcile.as_ref()?;
            Some(State {
                source: source.name.as_str().to_owned(),
                interval: settings.interval,
                retention: settings.retention,
                run: None,
            })
        })
        .collect();
    if states.is_empty() {
        return Ok(states);
    }
    states.sort_by(|a, b| a.source.cmp(&b.source));
    let runs = store.reconcile_runs().await?;
    for state in &mut states {
        state.run = runs.iter().find(|run| run.source == state.source).cloned();
    }
    Ok(states)
}
