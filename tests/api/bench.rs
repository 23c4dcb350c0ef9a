//! `hookledger bench` in its short mode: a smoke test of the benchmark on
//! both backends. It checks what the bench checks (every balance equals the
//! credits answered 200, duplicates were called duplicates, invariants
//! hold, the outbox's sink got every posting), never a timing.

use crate::backend::Backend;
use crate::postgres::TestDatabase;
use crate::process::hookledger;

crate::both_backends!(
    the_short_bench_runs_and_checks_itself,
    a_relay_started_after_the_phases_drains_them,
    a_relay_apart_sends_while_the_phases_run,
    an_open_loop_sends_no_faster_than_its_rate,
    a_stored_bench_fills_and_measures_each_size,
);

/// A one-second bench over 20 accounts with a destination, `extra` added;
/// what it printed, once it has passed its own checks.
async fn short_bench(backend: &Backend, events: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "--seconds",
        "1",
        "--events",
        events,
        "--connections",
        "4",
        "--accounts",
        "20",
        "--outbox",
    ];
    args.extend_from_slice(extra);
    bench_with(backend, &args).await
}

/// `hookledger bench` with `args`; what it printed, once it has passed its
/// own checks. On PostgreSQL in a database of its own: in the server's
/// shared one, the bench's tables (and migrations) would outlive the run
/// and meet the next, whatever build that is.
async fn bench_with(backend: &Backend, args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut command = hookledger(dir.path());
    command.arg("bench").args(args);
    let database = match backend {
        Backend::Postgres(url) => Some(TestDatabase::create(url).await),
        Backend::Sqlite => None,
    };
    if let Some(database) = &database {
        command.args(["--database", &database.url]);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    stdout
}

async fn the_short_bench_runs_and_checks_itself(backend: Backend) {
    let stdout = short_bench(&backend, "400", &[]).await;
    for phase in [
        "http new",
        "http duplicate",
        "http mixed",
        "ceiling new",
        "ceiling duplicate",
    ] {
        let row = stdout.lines().find(|l| l.starts_with(phase));
        let row = row.unwrap_or_else(|| panic!("no {phase} row:\n{stdout}"));
        // Two words of name and fourteen columns, the last three the
        // machine's CPU per request, idle % and steal %, read from
        // /proc/stat (Linux, where this suite runs).
        let fields: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(fields.len(), 16, "{row}");
        let figure = |i: usize| -> f64 { fields[i].parse().unwrap_or_else(|_| panic!("{row}")) };
        let (machine, idle, steal) = (figure(13), figure(14), figure(15));
        assert!(machine >= 0.0 && idle >= 0.0 && steal >= 0.0, "{row}");
        assert!(idle + steal <= 100.5, "{row}");
    }
    if let Backend::Postgres(_) = &backend {
        // The ceiling pgbench measured with the store's statements; their
        // rows are in the invariant check below.
        let row = stdout.lines().find(|l| l.starts_with("pgbench new"));
        let row = row.unwrap_or_else(|| panic!("no pgbench row:\n{stdout}"));
        let transactions: f64 = row.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert!(transactions > 0.0, "{row}");
        // And its groups, one event per account of the 20, written
        // set-based; their rows too are in the check.
        let row = stdout.lines().find(|l| l.starts_with("pgbench 20/tx "));
        let row = row.unwrap_or_else(|| panic!("no set-based pgbench row:\n{stdout}"));
        let transactions: f64 = row.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert!(transactions > 0.0, "{row}");
        assert!(
            stdout.contains("http / pgbench 20/tx: new events "),
            "{stdout}"
        );
    }
    let correct = stdout
        .lines()
        .find(|l| l.starts_with("correct: 20 balances"))
        .unwrap_or_else(|| panic!("no verdict:\n{stdout}"));
    // The phases stored something (how much depends on the machine's
    // speed in one second, which a test never judges).
    let credits: usize = correct
        .split_whitespace()
        .nth(7)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{correct}"));
    assert!(credits > 0, "{correct}");
    // The relay delivered every posting of the HTTP phases to the sink.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("outbox: ") && l.contains("postings delivered")),
        "no outbox line:\n{stdout}"
    );
}

/// `--relay-later`: the server only writes the messages; a relay process
/// started after the phase delivers every one of them.
async fn a_relay_started_after_the_phases_drains_them(backend: Backend) {
    let stdout = short_bench(&backend, "300", &["--only-new", "--relay-later"]).await;
    let drained = stdout.lines().find(|l| l.starts_with("outbox: "));
    let drained = drained.unwrap_or_else(|| panic!("no outbox line:\n{stdout}"));
    assert!(drained.ends_with("since the relay started"), "{drained}");
    // Every posting the phase stored reached the sink (the bench fails
    // otherwise), and there were some.
    let delivered: usize = drained.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(delivered > 0, "{drained}");
    // What each message cost the relay, the sink and PostgreSQL (none on
    // SQLite), read from /proc while the relay ran alone.
    let cpu = stdout
        .lines()
        .find(|l| l.starts_with("outbox: CPU per message"));
    let cpu = cpu.unwrap_or_else(|| panic!("no CPU line:\n{stdout}"));
    let figure = |name: &str| {
        let after = cpu.split(&format!("{name} ")).nth(1).unwrap_or("");
        after.split([',', ' ']).next().unwrap_or("").to_owned()
    };
    for name in ["relay", "sink"] {
        let us = figure(name);
        assert!(us.parse::<u64>().is_ok(), "{name}: {cpu}");
    }
    let database = figure("PostgreSQL");
    match backend {
        Backend::Postgres(_) => assert!(database.parse::<u64>().is_ok(), "{cpu}"),
        Backend::Sqlite => assert_eq!(database, "-", "{cpu}"),
    }
    assert!(stdout.contains("correct: 20 balances"), "{stdout}");
}

/// `--relay-apart`: the server only writes the messages; a relay process
/// started before the phase delivers every one of them.
async fn a_relay_apart_sends_while_the_phases_run(backend: Backend) {
    let stdout = short_bench(&backend, "300", &["--only-new", "--relay-apart"]).await;
    let drained = stdout.lines().find(|l| l.starts_with("outbox: "));
    let drained = drained.unwrap_or_else(|| panic!("no outbox line:\n{stdout}"));
    assert!(drained.ends_with("since the first phase"), "{drained}");
    let delivered: usize = drained.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(delivered > 0, "{drained}");
    assert!(stdout.contains("correct: 20 balances"), "{stdout}");
}

/// `--server-binary` drives the named build's `serve`: one that does not
/// exist fails the run before any phase.
#[test]
fn the_server_binary_is_the_one_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-hookledger");
    let output = hookledger(dir.path())
        .args([
            "bench",
            "--seconds",
            "1",
            "--events",
            "10",
            "--server-binary",
        ])
        .arg(&missing)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("cannot start hookledger serve"), "{stderr}");
    assert!(!stdout.contains("http new"), "{stdout}");
}

/// `--rate`: deliveries are due on a schedule, not as fast as answered. In
/// one second at 40/s at most 40 are due (the 40th at 0.975 s), so the
/// phase's rate cannot pass 41/s, where four connections in a closed loop
/// send all 400 planned within the second; and what was sent checks out.
async fn an_open_loop_sends_no_faster_than_its_rate(backend: Backend) {
    let stdout = short_bench(&backend, "400", &["--only-new", "--rate", "40"]).await;
    let head = stdout.lines().find(|l| l.starts_with("hookledger bench: "));
    let head = head.unwrap_or_else(|| panic!("no head:\n{stdout}"));
    assert!(head.contains("open loop at 40/s"), "{head}");
    let row = stdout.lines().find(|l| l.starts_with("http new"));
    let row = row.unwrap_or_else(|| panic!("no http new row:\n{stdout}"));
    let rate: f64 = row.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert!(rate > 0.0 && rate <= 41.0, "{row}");
    assert!(stdout.contains("correct: 20 balances"), "{stdout}");
}

/// `--stored`: the HTTP phase runs at each size, the database filled
/// between them; each fill says what it wrote and what the database
/// weighs, each size's reads are timed, and the ledger check passes on the
/// filled rows (the run fails otherwise).
async fn a_stored_bench_fills_and_measures_each_size(backend: Backend) {
    let args = [
        "--seconds",
        "1",
        "--events",
        "200",
        "--connections",
        "4",
        "--accounts",
        "20",
        "--only-new",
        "--stored",
        "0,3000",
        "--stored-accounts",
        "30",
    ];
    let stdout = bench_with(&backend, &args).await;
    for row in ["http new @0 ", "http new @3k "] {
        assert!(
            stdout.lines().any(|l| l.starts_with(row)),
            "no {row}row:\n{stdout}"
        );
    }
    let filled = stdout.lines().find(|l| l.starts_with("stored 3k: "));
    let filled = filled.unwrap_or_else(|| panic!("no fill line:\n{stdout}"));
    assert!(filled.contains("3000 postings filled"), "{filled}");
    assert!(filled.contains("MB per million postings"), "{filled}");
    for size in ["@0 ", "@3k "] {
        for read in [
            "search newest",
            "account page",
            "held queue",
            "retention batch",
        ] {
            let line = format!("read {size}");
            assert!(
                stdout
                    .lines()
                    .any(|l| l.starts_with(&line) && l.contains(read)),
                "no {read} at {size}:\n{stdout}"
            );
        }
    }
    // The held refund every 1000th posting: three at 3k, none at 0.
    let held = |size: &str| {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("read {size}")) && l.contains("held queue"));
        line.and_then(|l| l.rsplit(' ').next()).map(str::to_owned)
    };
    assert_eq!(held("@0 ").as_deref(), Some("0"), "{stdout}");
    assert_eq!(held("@3k ").as_deref(), Some("3"), "{stdout}");
    assert!(stdout.contains("correct: 20 balances"), "{stdout}");
}
