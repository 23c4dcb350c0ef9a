//! The PostgreSQL ceiling measured by pgbench: the store's own statements
//! for a new credit (`store::ceiling`), and for a group of them written
//! set-based (`store::ceiling_group`), on the same schema and database,
//! from as many clients as the server's pool has connections, with no HTTP
//! and no Rust in the way. Skipped, and said, where pgbench is not
//! installed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chrono::Utc;

use super::ceiling::prepare;
use super::measure::{PhaseResult, children_cpu, postgres_cpu};
use super::plan::Planned;
use crate::source::Source;
use crate::store::ceiling::{PgbenchCredit, pgbench_new_credit};
use crate::store::ceiling_group::{PREPARE_BALANCES, group_size, pgbench_group_credit};

pub struct Run<'a> {
    pub database_url: &'a str,
    pub folder: &'a Path,
    pub run_id: &'a str,
    pub clients: u32,
    pub accounts: usize,
    pub duration: Duration,
    /// Destinations the postings are told to (the outbox's rows).
    pub destinations: &'a [&'a str],
    /// Those of them that are ordered.
    pub ordered: &'a [&'a str],
}

/// Events per transaction of the set-based script: about the groups the
/// writer commits at 64 connections.
const GROUP: usize = 32;

/// Runs the script of one credit per transaction, then the set-based one
/// (`store::ceiling_group`), each for the run's duration; `Ok(None)` if
/// pgbench is not installed.
pub async fn run(
    run: &Run<'_>,
    source: &Source,
    sample: &Planned,
) -> Result<Option<Vec<PhaseResult>>, String> {
    if Command::new("pgbench").arg("--version").output().is_err() {
        return Ok(None);
    }
    let ready = prepare(source, sample)?;
    let event = ready
        .events
        .first()
        .ok_or("a bench delivery has no event")?;
    let prefix = format!("pgb-{}-", run.run_id);
    let credit = PgbenchCredit {
        source: source.name.as_str(),
        scope: source.scope.as_str(),
        prefix: &prefix,
        accounts: run.accounts,
        event_type: &event.event_type,
        currency: "USD",
        payload: &ready.body,
        payload_sha256: &ready.sha256,
        signature_headers: ready.signature_headers.as_deref(),
        signed_at: ready.signed_at,
        destinations: run.destinations,
        ordered: run.ordered,
        now: Utc::now(),
    };
    let single = pgbench_new_credit(&credit);
    let one = run_script(run, &single, "pgbench new", 1).await?;
    prepare_balances(run.database_url, &prefix, run.accounts).await?;
    let size = group_size(GROUP, run.accounts);
    let grouped = pgbench_group_credit(&credit, GROUP);
    // "pgbench 32/tx": new events per transaction.
    let name = format!("pgbench {size}/tx");
    let groups = run_script(run, &grouped, &name, size as u64).await?;
    Ok(Some(vec![one, groups]))
}

/// The set-based script's balance rows (`PREPARE_BALANCES`).
async fn prepare_balances(database_url: &str, prefix: &str, accounts: usize) -> Result<(), String> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(database_url)
        .await
        .map_err(|e| format!("pgbench's balances: {e}"))?;
    sqlx::query(PREPARE_BALANCES)
        .bind(prefix)
        .bind(accounts as i64)
        .bind("USD")
        .execute(&mut conn)
        .await
        .map_err(|e| format!("pgbench's balances: {e}"))?;
    Ok(())
}

/// Runs `script` from the run's clients for its duration: a row named
/// `name`, each transaction `events` new events.
async fn run_script(
    run: &Run<'_>,
    script: &str,
    name: &str,
    events: u64,
) -> Result<PhaseResult, String> {
    let script_path = run.folder.join("ceiling.pgbench");
    std::fs::write(&script_path, script).map_err(|e| e.to_string())?;
    let log_prefix = run.folder.join("pgbench");
    let client_before = children_cpu();
    let seconds = run.duration.as_secs().max(1);
    let child = Command::new("pgbench")
        .args(["-n", "-M", "prepared", "-j", "2", "-l"])
        .arg(format!("--log-prefix={}", log_prefix.display()))
        .arg(format!("--client={}", run.clients))
        .arg(format!("--time={seconds}"))
        .arg(format!("--file={}", script_path.display()))
        .arg(run.database_url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("pgbench: {e}"))?;
    // pgbench's server processes end with it, and their CPU time with them:
    // the database's share is sampled while they run, away from the start
    // and the end (none for a run too short for that).
    let database_cpu = match seconds >= 4 {
        true => {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let (cpu, at) = (postgres_cpu(), Instant::now());
            tokio::time::sleep(Duration::from_secs(seconds - 2)).await;
            let rate =
                postgres_cpu().saturating_sub(cpu).as_secs_f64() / at.elapsed().as_secs_f64();
            Some(Duration::from_secs_f64(rate * seconds as f64))
        }
        false => None,
    };
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("pgbench: {e}"))?;
    let client_cpu = children_cpu()
        .zip(client_before)
        .map(|(after, before)| after.saturating_sub(before));
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!("pgbench failed: {stdout}\n{stderr}"));
    }
    let transactions = processed(&stdout).ok_or_else(|| format!("pgbench said: {stdout}"))?;
    let failed = failed(&stdout).unwrap_or(0);
    let latencies_us = logged_latencies(run.folder)?;
    Ok(PhaseResult {
        name: name.to_owned(),
        elapsed: run.duration,
        answered: transactions,
        new_events: transactions * events,
        refused: failed,
        latencies_us,
        database_cpu,
        client_cpu,
        ..PhaseResult::default()
    })
}

/// `number of transactions actually processed: 12345` (pgbench 15; later
/// versions add `/12345` when a count was asked for).
fn processed(stdout: &str) -> Option<u64> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("number of transactions actually processed:"))?;
    let value = line.split(':').nth(1)?.trim();
    value.split('/').next()?.trim().parse().ok()
}

/// `number of failed transactions: 0 (0.000%)`, where pgbench reports it.
fn failed(stdout: &str) -> Option<u64> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("number of failed transactions:"))?;
    line.split(':')
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Each transaction's latency from pgbench's per-transaction logs
/// (`client transaction latency_us script epoch us`, one file per thread).
fn logged_latencies(folder: &Path) -> Result<Vec<u32>, String> {
    let mut latencies = Vec::new();
    for entry in std::fs::read_dir(folder).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let is_log = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("pgbench."));
        if !is_log {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        latencies.extend(
            text.lines()
                .filter_map(|line| line.split_whitespace().nth(2)?.parse::<u32>().ok()),
        );
        let _ = std::fs::remove_file(&path);
    }
    Ok(latencies)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pgbench_counts() {
        let out = "transaction type: ceiling.pgbench\nnumber of transactions actually \
                   processed: 52311\nnumber of failed transactions: 3 (0.006%)\n";
        assert_eq!(processed(out), Some(52311));
        assert_eq!(failed(out), Some(3));
        let later = "number of transactions actually processed: 10/10\n";
        assert_eq!(processed(later), Some(10));
        assert_eq!(processed("nothing"), None);
    }
}
