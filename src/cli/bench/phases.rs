//! The measured phases of a run, in order: the HTTP phases against the
//! server, then the ceilings straight through `ingest` (and pgbench's, on
//! PostgreSQL). Each prints its row and adds the credits it had stored to
//! the ledger; at the end, how the HTTP rates compare with the ceilings.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::args::BenchArgs;
use super::measure::{self, Cpu, PhaseResult};
use super::plan::{DUPLICATES, Ledger, MIXED, NEW, Planned, Rng};
use super::server::Server;
use super::{ceiling, drive, pgbench};
use crate::config::Destination;
use crate::ingest::Ingestor;
use crate::source::Source;
use crate::store::Store;

/// What the phases share: the run's settings, the ledger and plan they
/// extend, and the rows printed so far.
pub struct Phases<'a> {
    pub args: &'a BenchArgs,
    pub duration: Duration,
    pub postgres: bool,
    pub ledger: Ledger,
    pub rng: Rng,
    pub rows: Vec<PhaseResult>,
    /// After each HTTP row's name: the stored size it ran at (` @10M`).
    pub suffix: String,
}

impl Phases<'_> {
    /// New events, duplicates, then a mix (new events only with
    /// `--only-new`), over HTTP to the server at `address`.
    pub async fn http(&mut self, address: &str, server: &Server) -> Result<(), String> {
        let target = drive::Target {
            address,
            path: "/webhooks/bench",
        };
        let phases = [("new", NEW), ("duplicate", DUPLICATES), ("mixed", MIXED)];
        let phases = if self.args.only_new {
            &phases[..1]
        } else {
            &phases[..]
        };
        for &(name, profile) in phases {
            let planned = self
                .ledger
                .plan(&mut self.rng, profile, self.args.events, 0)?;
            let planned = Arc::new(planned);
            let cpu = Cpu::read(server.pid(), self.postgres);
            let client = measure::process_cpu(std::process::id());
            let (mut result, accepted) = drive::drive(
                &target,
                planned.clone(),
                (self.args.connections, self.args.rate),
                self.duration,
            )
            .await?;
            cpu.into(&mut result, server.pid(), self.postgres);
            result.client_cpu = client
                .zip(measure::process_cpu(std::process::id()))
                .map(|(before, after)| after.saturating_sub(before));
            result.server_rss_kb = measure::process_rss_kb(server.pid());
            let label = format!("http {name}{}", self.suffix);
            self.keep(result, label, &planned, &accepted);
        }
        Ok(())
    }

    /// New events, then duplicates, stored by `ingest` itself (none with
    /// `--only-new`); redeliveries are of the events accepted from the
    /// `since`-th on, the ceiling's own.
    pub async fn ceilings(
        &mut self,
        store: &Store,
        source: &Arc<Source>,
        since: usize,
    ) -> Result<(), String> {
        let ceilings = [("new", NEW), ("duplicate", DUPLICATES)];
        let ceilings = if self.args.only_new {
            &[][..]
        } else {
            &ceilings[..]
        };
        // One ingestor for both, as the server has one: its redeliveries are of
        // the ceiling's own new events, which it has seen stored.
        let ingestor = Ingestor::new(store);
        for &(name, profile) in ceilings {
            let planned = self
                .ledger
                .plan(&mut self.rng, profile, self.args.events, since)?;
            let cpu = Cpu::read(std::process::id(), self.postgres);
            let (mut result, accepted) = ceiling::run(
                &ingestor,
                source.clone(),
                &planned,
                self.args.connections,
                self.duration,
            )
            .await?;
            if let Some(database) = cpu.database_since() {
                result.database_cpu = Some(database);
            }
            result.machine = cpu.machine_since();
            self.keep(result, format!("ceiling {name}"), &planned, &accepted);
        }
        Ok(())
    }

    /// On PostgreSQL, pgbench's ceilings on the database at `database_url`
    /// (one new event per transaction, then groups written set-based),
    /// logging next to the config; `None` on SQLite or where pgbench is
    /// not installed.
    pub async fn pgbench(
        &mut self,
        (database_url, destinations): (&str, &[Destination]),
        (config_path, run_id): (&Path, &str),
        source: &Source,
        since: usize,
    ) -> Result<Option<Vec<PhaseResult>>, String> {
        if !self.postgres {
            return Ok(None);
        }
        let sample = self.ledger.plan(&mut self.rng, NEW, 1, since)?;
        let names: Vec<&str> = destinations.iter().map(|d| d.name.as_str()).collect();
        let ordered: Vec<&str> = destinations
            .iter()
            .filter(|d| d.ordered_by_account)
            .map(|d| d.name.as_str())
            .collect();
        let run = pgbench::Run {
            database_url,
            folder: config_path.parent().ok_or("the config has a folder")?,
            run_id,
            clients: self.args.pool,
            accounts: self.args.accounts,
            duration: self.duration,
            destinations: &names,
            ordered: &ordered,
        };
        pgbench::run(&run, source, &sample[0]).await
    }

    /// The HTTP phases' rates over the ceilings', and pgbench's row.
    pub fn print_ratios(&self, pgbench_rows: Option<Vec<PhaseResult>>) {
        let ratio = |http: &PhaseResult, ceiling: &PhaseResult, count: fn(&PhaseResult) -> u64| {
            http.per_second(count(http)) / ceiling.per_second(count(ceiling)).max(1e-9)
        };
        if let [new, duplicate, _, ceiling_new, ceiling_duplicate] = &self.rows[..] {
            println!(
                "http / ceiling: new events {:.2}, duplicates {:.2}",
                ratio(new, ceiling_new, |r| r.new_events),
                ratio(duplicate, ceiling_duplicate, |r| r.duplicates)
            );
        }
        match (pgbench_rows, self.rows.first()) {
            (Some(rows), Some(new)) => {
                for mut row in rows {
                    println!("{}", row.row());
                    println!(
                        "http / {}: new events {:.2}",
                        row.name,
                        ratio(new, &row, |r| r.new_events)
                    );
                }
            }
            _ if self.postgres => println!("pgbench ceiling: skipped, pgbench is not installed"),
            _ => {}
        }
    }

    /// Adds the phase's new events answered 200 to the expected sums, then
    /// prints its row and keeps it.
    fn keep(
        &mut self,
        mut result: PhaseResult,
        name: String,
        planned: &[Planned],
        accepted: &[usize],
    ) {
        for &index in accepted {
            self.ledger.accept(&planned[index]);
        }
        result.name = name;
        println!("{}", result.row());
        self.rows.push(result);
    }
}
