//! At-least-once senders for the availability tests (a restart under
//! socket activation, a rolling upgrade, a database failover, instances
//! behind a load balancer), and what must hold afterwards.
//!
//! Each sender makes new credits of the demo source (`standard-webhooks`,
//! credits only, so that no order changes a sum) until told to stop, and
//! POSTs each one until it gets a 2xx, re-signed with a fresh timestamp
//! per attempt as providers do; a fifth of the time it also sends an event
//! it has already had a 2xx for again, as providers redeliver. Half the
//! senders open a new connection per request (so a restart's backlog is
//! met on every request), half keep connections alive. Every answer is
//! counted by kind; a refused connection is told apart from other
//! transport errors.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::helpers::{ADMIN_TOKEN, DEMO_SECRET};
use hookledger::cli::signed_sample;
use hookledger::providers::Sample;
use hookledger::rng::SplitMix64 as Rng;
use hookledger::secret::Secret;
use hookledger::store::{EventFilter, Store};
use tokio::task::JoinHandle;

/// A config for instances the senders reach: the admin token, the `demo`
/// source they sign for, the limits behind a proxy on this host (harmless
/// without one), and `more`.
pub fn senders_config(more: &str) -> String {
    format!(
        r#"
[admin]
token = "{ADMIN_TOKEN}"

[limits]
trusted_proxies = ["127.0.0.1/32"]
max_connections_per_address = 0

[[sources]]
name = "demo"
kind = "standard-webhooks"
secrets = ["{DEMO_SECRET}"]
{more}"#
    )
}

/// The accounts the senders credit: `payer_0`, `payer_1`, ... (apart from
/// what else a test posts).
pub const ACCOUNT: &str = "payer_";

/// One credit a sender made.
#[derive(Debug, Clone)]
pub struct Credit {
    pub id: String,
    pub account: String,
    pub amount: i64,
}

/// Every answer the senders got, by kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Answers {
    /// 2xx: the event committed (new or duplicate).
    pub ok: u64,
    /// 503, each with `Retry-After` (counted apart when it had none).
    pub unavailable: u64,
    pub unavailable_without_retry_after: u64,
    /// Any other 5xx: never expected.
    pub server_errors: u64,
    /// 4xx: never expected (every request is signed right).
    pub client_errors: u64,
    /// The connection was refused: nothing listened.
    pub refused: u64,
    /// Any other error before an answer: reset, closed, timed out.
    pub transport: u64,
    /// The longest any attempt took to its answer (or its error).
    pub slowest: Duration,
}

impl Answers {
    pub fn attempts(&self) -> u64 {
        self.ok
            + self.unavailable
            + self.server_errors
            + self.client_errors
            + self.refused
            + self.transport
    }

    /// The share of attempts not answered 2xx, in percent.
    pub fn failed_percent(&self) -> f64 {
        let attempts = self.attempts().max(1) as f64;
        100.0 * (attempts - self.ok as f64) / attempts
    }
}

impl std::fmt::Display for Answers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} attempts: {} 2xx, {} 503, {} other 5xx, {} 4xx, {} refused, {} other transport \
             errors ({:.2}% not 2xx), the slowest {} ms",
            self.attempts(),
            self.ok,
            self.unavailable,
            self.server_errors,
            self.client_errors,
            self.refused,
            self.transport,
            self.failed_percent(),
            self.slowest.as_millis()
        )
    }
}

/// What the senders saw of one event, over all its attempts.
#[derive(Debug, Default, Clone, Copy)]
pub struct Seen {
    /// A 2xx that was not a duplicate: the answer to its commit.
    pub fresh: bool,
    /// A 2xx of any kind.
    pub acknowledged: bool,
    /// An attempt that got no answer, or whose answer was cut off.
    pub unanswered: bool,
    /// An attempt answered 503: whose commit's outcome the instance may
    /// not have known (a connection lost at COMMIT).
    pub unavailable: bool,
}

/// What a load came to.
#[derive(Debug)]
pub struct Tally {
    /// Every event id starts with it and `_`.
    pub prefix: String,
    pub credits: Vec<Credit>,
    pub answers: Answers,
    pub seen: HashMap<String, Seen>,
    /// The senders reach the instances through a proxy that retries what
    /// an instance never answered (haproxy's `retry-on`): an instance that
    /// committed an event and died is then answered for by another, as a
    /// duplicate, and the sender never sees the attempt cut off.
    pub proxy_retries: bool,
}

#[derive(Default)]
struct Shared {
    credits: Vec<Credit>,
    answers: Answers,
    seen: HashMap<String, Seen>,
    /// When each 2xx came, and from which instance.
    acknowledged_at: Vec<(usize, Instant)>,
}

/// A running load.
pub struct Load {
    prefix: String,
    stop: Arc<AtomicBool>,
    acknowledged: Arc<AtomicUsize>,
    shared: Arc<Mutex<Shared>>,
    senders: Vec<JoinHandle<()>>,
}

/// Where the load is sent: the instances' base URLs (`http://host:port`;
/// sender `n` sends to instance `n` modulo their number), which a test may
/// move, and the demo source's secret.
#[derive(Clone)]
pub struct Target {
    pub bases: Arc<RwLock<Vec<String>>>,
    pub secret: Secret,
}

impl Target {
    pub fn new(base: &str, secret: &str) -> Target {
        Target::spread(&[base], secret)
    }

    pub fn spread(bases: &[&str], secret: &str) -> Target {
        Target {
            bases: Arc::new(RwLock::new(bases.iter().map(|b| b.to_string()).collect())),
            secret: Secret::new(secret.trim()),
        }
    }

    /// Every sender to `base` from now on.
    pub fn move_to(&self, base: &str) {
        for each in self.bases.write().unwrap().iter_mut() {
            *each = base.to_owned();
        }
    }

    fn base(&self, sender: usize) -> String {
        let bases = self.bases.read().unwrap();
        bases[sender % bases.len()].clone()
    }
}

impl Load {
    /// `senders` senders making credits named `{prefix}_{sender}_{n}` over
    /// `accounts` accounts, from now until [`Load::finish`].
    pub fn start(target: &Target, prefix: &str, senders: usize, accounts: u64) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let acknowledged = Arc::new(AtomicUsize::new(0));
        let shared = Arc::new(Mutex::new(Shared::default()));
        let senders = (0..senders)
            .map(|n| {
                let sender = Sender {
                    number: n,
                    target: target.clone(),
                    client: client(n % 2 == 0),
                    shared: shared.clone(),
                    acknowledged: acknowledged.clone(),
                    rng: Rng::new(0x5eed ^ n as u64),
                };
                let (stop, prefix) = (stop.clone(), format!("{prefix}_{n}"));
                tokio::spawn(sender.run(stop, prefix, accounts))
            })
            .collect();
        Load {
            prefix: prefix.to_owned(),
            stop,
            acknowledged,
            shared,
            senders,
        }
    }

    /// New events acknowledged so far.
    pub fn acknowledged(&self) -> usize {
        self.acknowledged.load(Ordering::SeqCst)
    }

    /// Until `more` further events have been acknowledged (the load is
    /// flowing), failing after `within`.
    pub async fn until_acknowledged(&self, more: usize, within: Duration) {
        let target = self.acknowledged() + more;
        let deadline = tokio::time::Instant::now() + within;
        while self.acknowledged() < target {
            if tokio::time::Instant::now() >= deadline {
                let answers = self.answers();
                panic!(
                    "the load stalled: {} acknowledged, waiting for {target}; {answers}",
                    self.acknowledged()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// What the senders have been answered so far.
    pub fn answers(&self) -> Answers {
        self.shared.lock().unwrap().answers
    }

    /// The first 2xx from instance `instance` at or after `since`.
    pub fn first_acknowledged(&self, instance: usize, since: Instant) -> Option<Instant> {
        let shared = self.shared.lock().unwrap();
        let after = shared.acknowledged_at.iter();
        after
            .filter(|(i, at)| *i == instance && *at >= since)
            .map(|(_, at)| *at)
            .min()
    }

    /// No new events; every event made is delivered until acknowledged.
    pub async fn finish(self) -> Tally {
        self.stop.store(true, Ordering::SeqCst);
        for sender in self.senders {
            sender.await.expect("a sender panicked");
        }
        let shared = std::mem::take(&mut *self.shared.lock().unwrap());
        Tally {
            prefix: self.prefix,
            credits: shared.credits,
            answers: shared.answers,
            seen: shared.seen,
            proxy_retries: false,
        }
    }
}

fn client(fresh_connections: bool) -> reqwest::Client {
    hookledger::tls::build_client(|builder| {
        let builder = builder
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(10));
        if fresh_connections {
            builder.pool_max_idle_per_host(0)
        } else {
            builder
        }
    })
    .expect("a client builds")
}

struct Sender {
    number: usize,
    target: Target,
    client: reqwest::Client,
    shared: Arc<Mutex<Shared>>,
    acknowledged: Arc<AtomicUsize>,
    rng: Rng,
}

/// How an attempt ended.
enum Attempt {
    Acknowledged { fresh: bool },
    Retry { unanswered: bool, unavailable: bool },
}

impl Sender {
    async fn run(mut self, stop: Arc<AtomicBool>, prefix: String, accounts: u64) {
        let mut delivered: Vec<Credit> = Vec::new();
        for n in 0.. {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let credit = Credit {
                id: format!("{prefix}_{n}"),
                account: format!("{ACCOUNT}{}", self.rng.below(accounts)),
                amount: 1 + self.rng.below(10_000) as i64,
            };
            self.shared.lock().unwrap().credits.push(credit.clone());
            self.deliver(&credit).await;
            self.acknowledged.fetch_add(1, Ordering::SeqCst);
            if !delivered.is_empty() && self.rng.below(5) == 0 {
                let again = delivered[self.rng.below(delivered.len() as u64) as usize].clone();
                self.deliver(&again).await;
            }
            delivered.push(credit);
        }
    }

    /// Until a 2xx, re-signed each attempt.
    async fn deliver(&mut self, credit: &Credit) {
        for _ in 0..3000 {
            let attempt = self.attempt(credit).await;
            if self.record(credit, attempt) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20 + self.rng.below(80))).await;
        }
        panic!("{} never got a 2xx", credit.id);
    }

    /// Notes what an attempt came to: whether it was acknowledged.
    fn record(&self, credit: &Credit, attempt: Attempt) -> bool {
        let mut shared = self.shared.lock().unwrap();
        let seen = shared.seen.entry(credit.id.clone()).or_default();
        match attempt {
            Attempt::Acknowledged { fresh } => {
                seen.acknowledged = true;
                seen.fresh |= fresh;
                true
            }
            Attempt::Retry {
                unanswered,
                unavailable,
            } => {
                seen.unanswered |= unanswered;
                seen.unavailable |= unavailable;
                false
            }
        }
    }

    async fn attempt(&self, credit: &Credit) -> Attempt {
        let sample = Sample {
            event_id: credit.id.clone(),
            event_type: None,
            account_id: credit.account.clone(),
            amount_minor: credit.amount,
            currency: "USD".to_owned(),
            sequence: None,
            timestamp: chrono::Utc::now().timestamp(),
            payment: None,
        };
        let request = signed_sample("standard-webhooks", &self.target.secret, &sample).unwrap();
        let url = format!("{}/webhooks/demo", self.target.base(self.number));
        let mut post = self.client.post(url).body(request.body);
        for (name, value) in &request.headers {
            post = post.header(*name, value);
        }
        let started = Instant::now();
        let count = |f: &dyn Fn(&mut Answers)| {
            let mut shared = self.shared.lock().unwrap();
            let answers = &mut shared.answers;
            answers.slowest = answers.slowest.max(started.elapsed());
            f(answers)
        };
        let response = match post.send().await {
            Ok(response) => response,
            Err(error) if refused(&error) => {
                count(&|a| a.refused += 1);
                return Attempt::Retry {
                    unanswered: false,
                    unavailable: false,
                };
            }
            Err(_) => {
                count(&|a| a.transport += 1);
                return Attempt::Retry {
                    unanswered: true,
                    unavailable: false,
                };
            }
        };
        let status = response.status();
        if status.is_success() {
            return match response.json::<serde_json::Value>().await {
                Ok(answer) => {
                    count(&|a| a.ok += 1);
                    let instance = self.number % self.target.bases.read().unwrap().len();
                    let mut shared = self.shared.lock().unwrap();
                    shared.acknowledged_at.push((instance, Instant::now()));
                    Attempt::Acknowledged {
                        fresh: answer["duplicate"] == false,
                    }
                }
                // The body was cut off: as good as unanswered.
                Err(_) => {
                    count(&|a| a.transport += 1);
                    Attempt::Retry {
                        unanswered: true,
                        unavailable: false,
                    }
                }
            };
        }
        let unavailable = status == reqwest::StatusCode::SERVICE_UNAVAILABLE;
        if unavailable {
            let retry_after = response.headers().contains_key("retry-after");
            count(&|a| {
                a.unavailable += 1;
                a.unavailable_without_retry_after += u64::from(!retry_after);
            });
        } else if status.is_server_error() {
            count(&|a| a.server_errors += 1);
        } else {
            count(&|a| a.client_errors += 1);
        }
        Attempt::Retry {
            unanswered: false,
            unavailable,
        }
    }
}

/// A connection refused: nothing listened on the address.
fn refused(error: &reqwest::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        source = cause.source();
    }
    false
}

/// Every event stored, by id: its status and amount; fails on an event
/// stored twice.
pub async fn stored_events(store: &Store) -> HashMap<String, (String, i64)> {
    let mut stored = HashMap::new();
    let mut before = None;
    loop {
        let page = store
            .list_events(&EventFilter {
                limit: 500,
                before,
                ..EventFilter::default()
            })
            .await
            .unwrap();
        for row in &page {
            let previous = stored.insert(
                row.event_id.clone(),
                (row.status.clone(), row.amount_minor.unwrap_or(0)),
            );
            assert!(previous.is_none(), "{} stored twice", row.event_id);
        }
        match page.last() {
            Some(last) if page.len() == 500 => before = Some(last.intent_id),
            _ => break,
        }
    }
    stored
}

/// What must hold after a load, on the database `store` reads: every credit
/// stored once and applied, nothing else stored under the load's prefix, each balance the sum of
/// its credits, the invariant check clean, every event acknowledged, and
/// every commit answered as new unless an attempt of it went unanswered or
/// was answered 503 (a commit whose outcome the instance did not know; a
/// test that expects no 503 says so of [`Tally::answers`]), or a proxy may
/// have retried it ([`Tally::proxy_retries`]).
pub async fn assert_exact(store: &Store, tally: &Tally) {
    assert_eq!(store.check_invariants().await.unwrap(), []);
    let mut stored = stored_events(store).await;
    stored.retain(|id, _| id.starts_with(&format!("{}_", tally.prefix)));
    assert_eq!(stored.len(), tally.credits.len(), "every event stored once");
    let mut expected: HashMap<&str, i64> = HashMap::new();
    for credit in &tally.credits {
        let (status, amount) = &stored[&credit.id];
        assert_eq!((status.as_str(), *amount), ("applied", credit.amount));
        *expected.entry(&credit.account).or_default() += credit.amount;
        let seen = tally.seen[&credit.id];
        assert!(seen.acknowledged, "{} never acknowledged", credit.id);
        assert!(
            seen.fresh || seen.unanswered || seen.unavailable || tally.proxy_retries,
            "{} was committed but never answered as new ({seen:?})",
            credit.id
        );
    }
    let balances: HashMap<String, i64> = store
        .list_balances(10_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|b| b.account_id.starts_with(ACCOUNT))
        .map(|b| (b.account_id, b.balance_minor))
        .collect();
    assert_eq!(balances.len(), expected.len(), "no other account moved");
    for (account, sum) in &expected {
        assert_eq!(balances.get(*account), Some(sum), "{account}");
    }
}
