//! The tasks a server runs beside its requests: the drain of parked events,
//! the log budget's summaries, retention, the invariant check and the
//! anchors of the hash chains. Started
//! together, stopped together at shutdown (a step cut there rolls back
//! whole; the next start finds it).

mod anchors;
mod drain;
mod invariants;
mod reconcile;
pub mod retention;

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::config::{Anchors, Retention};
use crate::context::Context;

pub struct Background {
    tasks: Vec<JoinHandle<()>>,
}

impl Background {
    pub fn spawn(
        context: Arc<Context>,
        log_summary: Duration,
        retention: Retention,
        anchors: Anchors,
    ) -> Self {
        // The drain sweeps at once: releases a crash interrupted are
        // finished first.
        let mut tasks = vec![
            drain::spawn(context.clone()),
            log_summaries(context.clone(), log_summary),
            invariants::spawn(context.clone()),
            anchors::spawn(context.clone(), anchors),
        ];
        tasks.extend(reconcile::spawn(&context));
        tasks.extend(retention::spawn(context, retention));
        Self { tasks }
    }

    pub fn abort(&self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Every window, one line per kind of budgeted failure that was not all
/// logged.
fn log_summaries(context: Arc<Context>, window: Duration) -> JoinHandle<()> {
    let window_text = match window.as_secs() {
        60 => "minute".to_owned(),
        secs => format!("{secs} s"),
    };
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(window);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            for overflow in context.log_budget.roll() {
                tracing::warn!("{}", overflow.describe(&window_text));
            }
        }
    })
}
