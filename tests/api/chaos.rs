//! The chaos test: the real binary, an at-least-once sender and a process
//! killed with SIGKILL at random moments. Each delivery is retried with
//! jitter until it gets a 2xx, re-signed with a fresh timestamp each time
//! as providers do; 30% of events are delivered twice or more, 20% are
//! swapped with their neighbour in their account's order, credits and
//! debits, from concurrent senders. At the end: every event stored once,
//! every credit applied exactly once, every debit applied or held, each
//! balance exactly the sum of what was applied, the invariant check clean,
//! and no commit answered with anything but its 200 (an event no sender saw
//! answered as new must have lost an attempt to a kill).
//!
//! Short by default (CI: 300 events, 16 senders, 2 kills, on both
//! backends); `HOOKLEDGER_CHAOS_EVENTS=10000 HOOKLEDGER_CHAOS_KILLS=5
//! HOOKLEDGER_CHAOS_SENDERS=64` runs the full one, and with
//! `HOOKLEDGER_CHAOS_PG_RESTART=1` (run it alone) restarts PostgreSQL once
//! too. Seeded: a failure prints
//! its seed, `HOOKLEDGER_CHAOS_SEED` replays the same events and order (the
//! kills' moments still vary).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use hookledger::cli::signed_sample;
use hookledger::providers::Sample;
use hookledger::rng::SplitMix64 as Rng;
use hookledger::secret::Secret;

use crate::helpers::Backend;
use crate::process::Server;

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Debug, Clone)]
struct Event {
    id: String,
    account: String,
    /// Signed: credits positive.
    amount: i64,
    sequence: i64,
}

/// The events, and the order they are sent in (ids, duplicates repeated).
fn plan(seed: u64, events: u64) -> (Vec<Event>, Vec<usize>) {
    let mut rng = Rng::new(seed);
    let accounts = (events / 30).max(4);
    let mut all = Vec::new();
    let mut next_sequence: HashMap<u64, i64> = HashMap::new();
    for n in 0..events {
        let account = rng.below(accounts);
        let sequence = next_sequence.entry(account).or_insert(0);
        *sequence += 1;
        // The first event of an account is a large credit; later debits are
        // small, so no debit in order ever overdraws.
        let amount = if *sequence == 1 {
            100_000
        } else if rng.below(4) == 0 {
            -(1 + rng.below(50) as i64)
        } else {
            1 + rng.below(1000) as i64
        };
        all.push(Event {
            id: format!("chaos_{seed}_{n}"),
            account: format!("acct_{account}"),
            amount,
            sequence: *sequence,
        });
    }
    let mut order: Vec<usize> = (0..all.len()).collect();
    // 20%: swapped with the next event of the same account.
    for i in 0..order.len() {
        if rng.below(5) == 0
            && let Some(j) =
                (i + 1..order.len()).find(|&j| all[order[j]].account == all[order[i]].account)
        {
            order.swap(i, j);
        }
    }
    // 30%: delivered again (or more), somewhere later.
    let mut sends = Vec::new();
    for &e in &order {
        sends.push(e);
        while rng.below(10) < 3 {
            let at = sends.len() + rng.below(20) as usize;
            sends.push(e);
            let last = sends.len() - 1;
            sends.swap(last, at.min(last));
        }
    }
    (all, sends)
}

fn signed(dir: &Path, event: &Event) -> hookledger::cli::SignedRequest {
    let secret = std::fs::read_to_string(dir.join("data/demo_secret")).unwrap();
    let debit = event.amount < 0;
    let sample = Sample {
        event_id: event.id.clone(),
        event_type: debit.then(|| "balance.debit".to_owned()),
        account_id: event.account.clone(),
        amount_minor: event.amount.abs(),
        currency: "USD".to_owned(),
        sequence: Some(event.sequence),
        timestamp: chrono::Utc::now().timestamp(),
        payment: None,
    };
    signed_sample("standard-webhooks", &Secret::new(secret.trim()), &sample).unwrap()
}

/// What the senders saw for one event, over all its copies and attempts.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    /// A 2xx that was not a duplicate: the answer to the commit.
    fresh: bool,
    /// An attempt that got no answer (a kill cut it off).
    unanswered: bool,
    server_errors: u32,
}

type Ledger = std::sync::Mutex<HashMap<String, Seen>>;

/// Delivers until a 2xx, re-signing each attempt; records what it saw.
async fn deliver(
    client: &reqwest::Client,
    base: &RwLock<String>,
    dir: &Path,
    event: &Event,
    rng: &mut Rng,
    seen: &Ledger,
) {
    let mark = |f: &dyn Fn(&mut Seen)| f(seen.lock().unwrap().entry(event.id.clone()).or_default());
    for _ in 0..2000 {
        let request = signed(dir, event);
        let url = format!("{}/webhooks/demo", base.read().unwrap());
        let mut post = client.post(url).body(request.body);
        for (name, value) in &request.headers {
            post = post.header(*name, value);
        }
        match post.send().await {
            Ok(response) if response.status().is_success() => {
                match response.json::<serde_json::Value>().await {
                    Ok(answer) => {
                        if answer["duplicate"] == false {
                            mark(&|s| s.fresh = true);
                        }
                    }
                    // The body was cut off: as good as unanswered.
                    Err(_) => mark(&|s| s.unanswered = true),
                }
                return;
            }
            Ok(response) if response.status().is_server_error() => {
                mark(&|s| s.server_errors += 1);
            }
            Ok(response) => panic!("{}: answered {}", event.id, response.status()),
            Err(_) => mark(&|s| s.unanswered = true),
        }
        tokio::time::sleep(Duration::from_millis(20 + rng.below(80))).await;
    }
    panic!("{} never got a 2xx", event.id);
}

/// Restarts the local PostgreSQL cluster (the full run's database restart:
/// every other test on the server would see it too, so never in CI).
fn restart_postgres() {
    let versions = std::fs::read_dir("/etc/postgresql").expect("a local cluster");
    let version = versions
        .filter_map(|v| v.ok()?.file_name().into_string().ok())
        .max_by_key(|v| v.parse::<u32>().unwrap_or(0))
        .expect("a version");
    let status = std::process::Command::new("pg_ctlcluster")
        .args(["--skip-systemctl-redirect", &version, "main", "restart"])
        .status()
        .expect("pg_ctlcluster runs");
    assert!(status.success(), "PostgreSQL restarted");
    eprintln!("chaos: restarted PostgreSQL {version}");
}

async fn the_ledger_is_exact_under_kills_and_redeliveries(backend: Backend) {
    let seed = setting(
        "HOOKLEDGER_CHAOS_SEED",
        chrono::Utc::now().timestamp_nanos_opt().unwrap_or(7) as u64,
    );
    let (count, kills, senders) = (
        setting("HOOKLEDGER_CHAOS_EVENTS", 300),
        setting("HOOKLEDGER_CHAOS_KILLS", 2),
        setting("HOOKLEDGER_CHAOS_SENDERS", 16),
    );
    eprintln!("chaos seed {seed}: HOOKLEDGER_CHAOS_SEED={seed} replays it");
    let dir = tempfile::tempdir().unwrap();
    let (database_url, postgres) =
        crate::postgres::database_for(&backend, &dir.path().join("data/hookledger.db")).await;
    let env = [("HOOKLEDGER_DATABASE_URL", database_url.as_str())];
    let mut server = Server::start(dir.path(), &env, "note");
    let base = Arc::new(RwLock::new(server.base()));
    let (events, sends) = plan(seed, count);
    let (events, sends) = (Arc::new(events), Arc::new(sends));
    let next = Arc::new(AtomicUsize::new(0));
    let seen: Arc<Ledger> = Arc::default();
    let workdir = dir.path().to_path_buf();
    let tasks: Vec<_> = (0..senders)
        .map(|n| {
            let (events, sends, next, base, seen, workdir) = (
                events.clone(),
                sends.clone(),
                next.clone(),
                base.clone(),
                seen.clone(),
                workdir.clone(),
            );
            tokio::spawn(async move {
                let client = hookledger::tls::client();
                let mut rng = Rng::new(seed ^ (n + 1));
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&e) = sends.get(i) else { break };
                    deliver(&client, &base, &workdir, &events[e], &mut rng, &seen).await;
                }
            })
        })
        .collect();
    let mut rng = Rng::new(seed.rotate_left(7));
    for kill in 0..kills {
        // Somewhere in the middle of the sending.
        let target = sends.len() * (kill as usize + 1) / (kills as usize + 1);
        while next.load(Ordering::SeqCst) < target {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(rng.below(50))).await;
        server.kill();
        if kill == 0 && postgres.is_some() && setting("HOOKLEDGER_CHAOS_PG_RESTART", 0) == 1 {
            restart_postgres();
        }
        server = Server::start(dir.path(), &env, "note");
        *base.write().unwrap() = server.base();
    }
    for task in tasks {
        task.await.unwrap();
    }
    drop(server);

    let store = crate::postgres::side_store(&database_url).await;
    assert_eq!(store.check_invariants().await.unwrap(), [], "seed {seed}");
    let chains = store.verify_chains().await.unwrap();
    assert!(chains.is_clean(), "seed {seed}: {chains:#?}");
    assert!(chains.entries > 0, "seed {seed}: {chains:#?}");
    let stored = crate::at_least_once::stored_events(&store).await;
    assert_eq!(
        stored.len(),
        events.len(),
        "seed {seed}: every event stored once"
    );
    let mut expected: HashMap<&str, i64> = HashMap::new();
    for event in events.iter() {
        let (status, amount) = &stored[&event.id];
        assert_eq!(*amount, event.amount, "seed {seed}: {}", event.id);
        let applied = status == "applied";
        if event.amount > 0 {
            assert!(applied, "seed {seed}: credit {} is {status}", event.id);
        } else {
            assert!(
                applied || status == "stale",
                "seed {seed}: debit {} is {status}",
                event.id
            );
        }
        if applied {
            *expected.entry(&event.account).or_default() += event.amount;
        }
    }
    let balances: HashMap<String, i64> = store
        .list_balances(10_000)
        .await
        .unwrap()
        .into_iter()
        .map(|b| (b.account_id, b.balance_minor))
        .collect();
    for (account, sum) in &expected {
        assert_eq!(balances.get(*account), Some(sum), "seed {seed}: {account}");
    }
    // Every commit was answered, unless a kill cut its request off: an event
    // no sender ever saw answered as new must have had an unanswered
    // attempt. One answered only 5xx or duplicate would be a commit answered
    // 5xx.
    let seen = seen.lock().unwrap();
    for event in events.iter() {
        let s = seen[&event.id];
        assert!(
            s.fresh || s.unanswered,
            "seed {seed}: {} was committed but never answered as new ({s:?})",
            event.id
        );
    }
    let server_errors: u32 = seen.values().map(|s| s.server_errors).sum();
    eprintln!(
        "chaos seed {seed}: {} events, {} deliveries, {kills} kills, {server_errors} answers 5xx",
        events.len(),
        sends.len(),
    );
}

crate::both_backends!(the_ledger_is_exact_under_kills_and_redeliveries);
