//! The dashboard's chart: deliveries per 10 minutes over the last 24 hours,
//! stacked by outcome, as inline SVG built from numbers and fixed class
//! names only (the template escapes them anyway), and the hour and day
//! counts per outcome beside it.

use chrono::{DateTime, TimeDelta, Utc};

use crate::telemetry::Metrics;
use crate::telemetry::timeline::OUTCOMES;

const MINUTES: usize = 24 * 60;
const PER_BAR: usize = 10;
/// The SVG's user units: one per minute across (1,440), 100 up.
pub const HEIGHT: u32 = 100;

pub struct Rect {
    pub y: u32,
    pub height: u32,
    pub class: &'static str,
}

pub struct Bar {
    pub x: usize,
    pub rects: Vec<Rect>,
    /// "12:00-12:10 UTC: 4 applied, 1 duplicate".
    pub title: String,
}

pub struct Chart {
    pub bars: Vec<Bar>,
    /// Outcome (its class), its label, last hour, last 24 hours.
    pub legend: Vec<(&'static str, String, u64, u64)>,
    /// The tallest bar's deliveries: the chart's scale.
    pub max: u32,
}

pub fn chart(metrics: &Metrics, now: DateTime<Utc>) -> Chart {
    let minutes = metrics.per_minute(now, MINUTES);
    let sum = |range: &[[u32; OUTCOMES.len()]], i: usize| -> u64 {
        range.iter().map(|m| u64::from(m[i])).sum()
    };
    let legend = OUTCOMES
        .iter()
        .enumerate()
        .map(|(i, outcome)| {
            let label = outcome.replace('_', " ");
            (
                *outcome,
                label,
                sum(&minutes[MINUTES - 60..], i),
                sum(&minutes, i),
            )
        })
        .collect();
    let groups: Vec<[u32; OUTCOMES.len()]> = minutes
        .chunks(PER_BAR)
        .map(|chunk| {
            let mut total = [0u32; OUTCOMES.len()];
            for minute in chunk {
                for (t, c) in total.iter_mut().zip(minute) {
                    *t = t.saturating_add(*c);
                }
            }
            total
        })
        .collect();
    let max = groups
        .iter()
        .map(|g| g.iter().fold(0u32, |a, c| a.saturating_add(*c)))
        .max()
        .unwrap_or(0);
    let start = now - TimeDelta::minutes(MINUTES as i64 - 1);
    let bars = groups
        .iter()
        .enumerate()
        .filter(|(_, counts)| counts.iter().any(|c| *c > 0))
        .map(|(i, counts)| bar(i, counts, max, start))
        .collect();
    Chart { bars, legend, max }
}

fn bar(i: usize, counts: &[u32; OUTCOMES.len()], max: u32, start: DateTime<Utc>) -> Bar {
    let mut top = HEIGHT;
    let mut rects = Vec::new();
    for (outcome, count) in OUTCOMES.iter().zip(counts) {
        if *count == 0 {
            continue;
        }
        // At least one unit tall, so a single delivery shows.
        let height = (u64::from(*count) * u64::from(HEIGHT) / u64::from(max.max(1))).max(1) as u32;
        let height = height.min(top);
        top -= height;
        rects.push(Rect {
            y: top,
            height,
            class: outcome,
        });
    }
    let from = start + TimeDelta::minutes((i * PER_BAR) as i64);
    let to = from + TimeDelta::minutes(PER_BAR as i64);
    let parts: Vec<String> = OUTCOMES
        .iter()
        .zip(counts)
        .filter(|(_, c)| **c > 0)
        .map(|(o, c)| format!("{c} {}", o.replace('_', " ")))
        .collect();
    Bar {
        x: i * PER_BAR,
        rects,
        title: format!(
            "{}-{} UTC: {}",
            from.format("%H:%M"),
            to.format("%H:%M"),
            parts.join(", ")
        ),
    }
}
