//! What a phase measured: rates, latency percentiles and CPU time per
//! request, read from /proc.

use std::time::Duration;

/// Linux reports process CPU time in clock ticks of 1/100 s (USER_HZ is 100
/// on every architecture Linux supports for userspace ABI purposes).
const TICK: Duration = Duration::from_millis(10);

/// CPU time (user + system) of one process, if it exists.
pub fn process_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    ticks(&stat).map(|t| TICK * t as u32)
}

/// CPU time (user + system) of this process's children that have ended
/// and been waited for (pgbench, once it exits).
pub fn children_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split(' ').collect();
    // cutime and cstime: fields 16 and 17; `rest` starts at field 3.
    let user: u64 = fields.get(13)?.parse().ok()?;
    let system: u64 = fields.get(14)?.parse().ok()?;
    Some(TICK * (user + system) as u32)
}

/// Resident memory of one process (VmRSS), in kB.
pub fn process_rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    rss_kb(&status)
}

fn rss_kb(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU time of every PostgreSQL server process on this machine (the
/// database's share of a run: it is local here).
pub fn postgres_cpu() -> Duration {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Duration::ZERO;
    };
    let mut total = 0u64;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if command(&stat) == Some("postgres") {
            total += ticks(&stat).unwrap_or(0);
        }
    }
    TICK * total as u32
}

/// The command name in `/proc/<pid>/stat`: between the first `(` and the
/// last `)` (a name may hold either).
fn command(stat: &str) -> Option<&str> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    stat.get(open + 1..close)
}

/// utime + stime: fields 14 and 15, counted from after the command.
fn ticks(stat: &str) -> Option<u64> {
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split(' ').collect();
    // `rest` starts at field 3 (state).
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some(user + system)
}

/// The machine's CPU time by state, summed over its CPUs (the `cpu` line of
/// `/proc/stat`, in ticks): what a phase's share of idle and stolen time is
/// taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachineTicks {
    total: u64,
    idle: u64,
    steal: u64,
}

impl MachineTicks {
    pub fn read() -> Option<Self> {
        Self::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// user nice system idle iowait irq softirq steal (guest time is
    /// already inside user and nice).
    fn parse(stat: &str) -> Option<Self> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let fields: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(|field| field.parse().ok())
            .collect::<Option<_>>()?;
        let [_, _, _, idle, iowait, _, _, steal] = fields[..] else {
            return None;
        };
        Some(Self {
            total: fields.iter().sum(),
            idle: idle + iowait,
            steal,
        })
    }

    /// What the machine did since `self`: see [`MachineShare`].
    pub fn since(self, earlier: Self) -> MachineShare {
        let total = self.total.saturating_sub(earlier.total);
        let idle = self.idle.saturating_sub(earlier.idle);
        let steal = self.steal.saturating_sub(earlier.steal);
        let percent = |part: u64| 100.0 * part as f64 / total.max(1) as f64;
        MachineShare {
            idle_percent: percent(idle),
            steal_percent: percent(steal),
            busy: TICK * total.saturating_sub(idle + steal) as u32,
        }
    }
}

/// The machine's CPU time over a phase, all its CPUs together. A phase
/// that left CPU idle was not bound by CPU; one with much stolen by the
/// hypervisor was not alone. `busy` is every process's work (server,
/// database, relay, load generator, sink): per request, the cost that
/// stays comparable when the rate swings with the machine's neighbours.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MachineShare {
    pub idle_percent: f64,
    pub steal_percent: f64,
    pub busy: Duration,
}

/// One phase's figures.
#[derive(Debug, Clone, Default)]
pub struct PhaseResult {
    pub name: String,
    pub elapsed: Duration,
    /// Requests answered 2xx.
    pub answered: u64,
    pub new_events: u64,
    pub duplicates: u64,
    /// Answers that were not 2xx (each retried until 2xx).
    pub refused: u64,
    /// A redelivery the receiver did not call a duplicate, or a new event
    /// it did.
    pub misjudged: u64,
    /// Per answered request, microseconds.
    pub latencies_us: Vec<u32>,
    /// CPU of the process doing the work (the server, or the bench itself
    /// for a ceiling) and of the database server, if separate.
    pub server_cpu: Duration,
    pub database_cpu: Option<Duration>,
    /// CPU of the bench process while it drove the server (the load
    /// generator, and the outbox's sink with `--outbox`).
    pub client_cpu: Option<Duration>,
    /// The server's resident memory at the end of the phase, in kB.
    pub server_rss_kb: Option<u64>,
    /// The whole machine's CPU over the phase.
    pub machine: Option<MachineShare>,
}

impl PhaseResult {
    pub fn per_second(&self, count: u64) -> f64 {
        count as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The latency at percentile `p` (0-100), in milliseconds.
    pub fn percentile_ms(&mut self, p: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return 0.0;
        }
        self.latencies_us.sort_unstable();
        let rank = ((p / 100.0) * self.latencies_us.len() as f64).ceil() as usize;
        let index = rank.clamp(1, self.latencies_us.len()) - 1;
        f64::from(self.latencies_us[index]) / 1000.0
    }

    fn cpu_per_request_us(&self, cpu: Duration) -> f64 {
        cpu.as_secs_f64() * 1e6 / self.answered.max(1) as f64
    }

    /// One line of the report table.
    pub fn row(&mut self) -> String {
        let per_request = |cpu: Option<Duration>| {
            cpu.map(|cpu| format!("{:.0}", self.cpu_per_request_us(cpu)))
                .unwrap_or_else(|| "-".to_owned())
        };
        let (database, client) = (per_request(self.database_cpu), per_request(self.client_cpu));
        let rss = self
            .server_rss_kb
            .map(|kb| format!("{:.0}", kb as f64 / 1024.0))
            .unwrap_or_else(|| "-".to_owned());
        let machine = per_request(self.machine.map(|m| m.busy));
        let share = |percent: fn(&MachineShare) -> f64| {
            self.machine
                .map(|m| format!("{:.0}", percent(&m)))
                .unwrap_or_else(|| "-".to_owned())
        };
        let (idle, steal) = (share(|m| m.idle_percent), share(|m| m.steal_percent));
        let (p50, p95, p99) = (
            self.percentile_ms(50.0),
            self.percentile_ms(95.0),
            self.percentile_ms(99.0),
        );
        format!(
            "{:<18} {:>9.0} {:>9.0} {:>9.0} {:>8.1} {:>8.1} {:>8.1} {:>10.0} {:>9} {:>9} {:>8} {:>7} {:>10} {:>7} {:>8}",
            self.name,
            self.per_second(self.answered),
            self.per_second(self.new_events),
            self.per_second(self.duplicates),
            p50,
            p95,
            p99,
            self.cpu_per_request_us(self.server_cpu),
            database,
            client,
            self.refused,
            rss,
            machine,
            idle,
            steal,
        )
    }
}

pub const HEADER: &str = "phase                  req/s     new/s     dup/s  p50 ms   p95 ms   p99 ms  server µs  db µs/req  client µs  non-2xx  RSS MB  machine µs  idle %  steal %";

/// CPU counters at the start of a phase.
pub struct Cpu {
    process: Option<Duration>,
    database: Option<Duration>,
    machine: Option<MachineTicks>,
}

impl Cpu {
    pub fn read(pid: u32, postgres: bool) -> Self {
        Self {
            process: process_cpu(pid),
            database: postgres.then(postgres_cpu),
            machine: MachineTicks::read(),
        }
    }

    pub fn into(self, result: &mut PhaseResult, pid: u32, postgres: bool) {
        if let (Some(before), Some(after)) = (self.process, process_cpu(pid)) {
            result.server_cpu = after.saturating_sub(before);
        }
        if postgres {
            result.database_cpu = self.database_since();
        }
        result.machine = self.machine_since();
    }

    pub fn machine_since(&self) -> Option<MachineShare> {
        let now = MachineTicks::read()?;
        Some(now.since(self.machine?))
    }

    pub fn database_since(&self) -> Option<Duration> {
        self.database
            .map(|before| postgres_cpu().saturating_sub(before))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_machines_idle_and_stolen_time_from_proc_stat() {
        let before = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8\n";
        let after = "cpu  300 0 150 1000 50 0 0 100 0 0\n";
        let before = MachineTicks::parse(before).unwrap();
        let after = MachineTicks::parse(after).unwrap();
        // 600 ticks went by: 200 idle, 100 stolen, 300 busy.
        let share = after.since(before);
        assert!(
            (share.idle_percent - 100.0 * 200.0 / 600.0).abs() < 1e-9,
            "{share:?}"
        );
        assert!(
            (share.steal_percent - 100.0 * 100.0 / 600.0).abs() < 1e-9,
            "{share:?}"
        );
        assert_eq!(share.busy, TICK * 300);
        assert_eq!(MachineTicks::parse("cpu0 1 2 3\n"), None);
        assert_eq!(MachineTicks::parse("cpu  1 2 3\n"), None, "too few fields");
    }

    #[test]
    fn reads_cpu_ticks_and_names_from_proc_stat() {
        let stat = "4242 (post gres) S 1 2 3 4 5 6 7 8 9 10 250 31 0 0 20 0 1 0";
        assert_eq!(command(stat), Some("post gres"));
        assert_eq!(ticks(stat), Some(281));
        assert!(process_cpu(std::process::id()).is_some());
        assert!(children_cpu().is_some());
        assert_eq!(process_cpu(u32::MAX), None);
        assert_eq!(rss_kb("Name:\tx\nVmRSS:\t   24312 kB\n"), Some(24312));
        assert_eq!(rss_kb("Name:\tx\n"), None);
        assert!(process_rss_kb(std::process::id()).is_some());
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut result = PhaseResult {
            latencies_us: (1..=100).rev().map(|ms| ms * 1000).collect(),
            ..PhaseResult::default()
        };
        assert_eq!(result.percentile_ms(50.0), 50.0);
        assert_eq!(result.percentile_ms(99.0), 99.0);
        assert_eq!(result.percentile_ms(100.0), 100.0);
        assert_eq!(PhaseResult::default().percentile_ms(99.0), 0.0);
    }
}
