//! Building and running the application: bind first (so tests can use port
//! 0 and learn the port) or take the socket systemd passed, connect,
//! migrate, then serve; and stop, draining first.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix_server::Server;
use actix_web::web::Data;
use chrono::{DateTime, Utc};
use tokio::task::JoinHandle;

use crate::background::Background;
use crate::clock::Clock;
use crate::config::{Config, ConfigError};
use crate::context::Context;
use crate::ingest::Ingestor;
use crate::outbox::Relays;
use crate::server;
use crate::store::{Store, StoreError};
use crate::telemetry::{Metrics, OutboxInstruments};

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot listen on {address}: {source}")]
    Bind {
        address: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub struct Application {
    listening: Listening,
    server: Server,
    store: Store,
    background: Background,
    relays: Relays,
    context: Data<Context>,
    /// How long a SIGTERM drains before the listener stops.
    drain: Duration,
}

/// Opens the configured database. The data directory (and an SQLite file's
/// folder inside it) is created; a folder elsewhere must exist already, so
/// a typo in `database_url` never creates folders anywhere on disk.
pub async fn connect_store(config: &Config) -> Result<Store, StoreError> {
    if let Some(folder) = sqlite_folder(&config.database_url)
        && folder.starts_with(&config.data_dir)
    {
        std::fs::create_dir_all(&folder)
            .map_err(|e| StoreError::Connect(format!("cannot create {}: {e}", folder.display())))?;
    }
    let store = Store::connect(&config.database_url, &config.database).await?;
    // Every process that may post writes the messages for every destination.
    Ok(store.with_routes(crate::config::routes(&config.destinations)))
}

/// The file of an `sqlite:` database URL, as sqlx reads it.
pub fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    use std::str::FromStr;
    if !url.starts_with("sqlite:") {
        return None;
    }
    let options = sqlx::sqlite::SqliteConnectOptions::from_str(url).ok()?;
    Some(options.get_filename().to_path_buf())
}

/// The folder of an `sqlite:` database file, as sqlx reads the URL
/// (percent-decoded); none for a path that climbs with `..`, which could
/// leave `data_dir` however it starts.
fn sqlite_folder(url: &str) -> Option<std::path::PathBuf> {
    let file = sqlite_file(url)?;
    let folder = file.parent()?;
    let climbs = folder
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir));
    (!folder.as_os_str().is_empty() && !climbs).then(|| folder.to_path_buf())
}

/// Where the server listens, and whether systemd passed the socket.
#[derive(Debug, Clone, Copy)]
pub struct Listening {
    pub address: SocketAddr,
    /// Socket activation: `listen` was not used.
    pub inherited: bool,
}

impl Application {
    /// Binds `listen` and builds everything (see [`Application::build_on`]).
    pub async fn build(config: Config, clock: Arc<dyn Clock>) -> Result<Self, StartupError> {
        Self::build_on(config, clock, None).await
    }

    /// Builds the application on `inherited`, the socket systemd passed
    /// (`server::inherited_listener`), or else on `listen`, bound first.
    pub async fn build_on(
        mut config: Config,
        clock: Arc<dyn Clock>,
        inherited: Option<TcpListener>,
    ) -> Result<Self, StartupError> {
        // The destinations' own keys, read as the relays will read them: a
        // config loaded without reading them (`config::from_toml`) is
        // refused here, before anything runs.
        crate::outbox::destinations::check_all(&config.destinations)?;
        let address = match &inherited {
            Some(_) => "the socket systemd passed".to_owned(),
            None => config.listen.clone(),
        };
        let bind_error = |source| StartupError::Bind {
            address: address.clone(),
            source,
        };
        let was_passed = inherited.is_some();
        let listener = match inherited {
            Some(listener) => listener,
            None => TcpListener::bind(&config.listen).map_err(bind_error)?,
        };
        let listening = Listening {
            address: listener.local_addr().map_err(bind_error)?,
            inherited: was_passed,
        };
        for warning in &config.warnings {
            tracing::warn!("{warning}");
        }
        let store = open_store(&config, clock.now()).await?;
        let lifetime = connection_lifetime(&config);
        let metrics = Metrics::default();
        let relay_metrics = metrics.outbox();
        let ingestor = Ingestor::new(&store);
        let context = Data::new(Context::new(&mut config, &store, ingestor, clock, metrics));
        let background = Background::spawn(
            context.clone().into_inner(),
            config.limits.log_summary,
            config.retention,
            config.anchors.clone(),
        );
        let relays = spawn_relays(&config, &store, relay_metrics);
        let server = server::http_server(listener, &config, context.clone(), lifetime)
            .map_err(bind_error)?;
        Ok(Self {
            listening,
            server,
            store,
            background,
            relays,
            context,
            drain: config.drain,
        })
    }

    /// On SIGTERM: drain first. `/readyz` answers 503 at once and every
    /// answer closes its connection, while the listener still accepts and
    /// serves for `drain_secs`, so that a load balancer stops sending here
    /// before a connection could be refused. Then, and at once on Ctrl-C
    /// (SIGINT, a person at a terminal): stop accepting and let requests in
    /// flight finish, their transactions committed and answered, for up to
    /// `shutdown_timeout_secs`; what is still running then is cut off and
    /// its transaction rolled back. A provider's redelivery of a
    /// rolled-back event applies it; one cut off while waiting in a group
    /// may have been committed, and its redelivery is then a duplicate. A
    /// second signal, during the drain or after, exits at once. For the
    /// binary only: a test process keeps its own Ctrl-C.
    pub fn stop_on_signals(&self) -> JoinHandle<()> {
        let handle = self.server.handle();
        let lifecycle = self.context.lifecycle.clone();
        let drain = self.drain;
        tokio::spawn(async move {
            let Some(signal) = shutdown_signal().await else {
                return;
            };
            lifecycle.start_draining();
            if signal == "SIGTERM" && !drain.is_zero() {
                tracing::info!(
                    signal,
                    drain_secs = drain.as_secs(),
                    "draining: /readyz answers 503 while requests are still served"
                );
                tokio::select! {
                    _ = tokio::time::sleep(drain) => {}
                    Some(signal) = shutdown_signal() => stop_now(signal),
                }
            }
            tracing::info!(signal, "shutting down: finishing requests in flight");
            let graceful = tokio::spawn({
                let handle = handle.clone();
                async move {
                    // Accepting stops first, and connections accepted by
                    // then reach their workers and are served: actix's
                    // stop drops those still queued for a worker, which
                    // their clients would see reset. Later ones wait in the
                    // socket's backlog (for the next process, when systemd
                    // holds the socket).
                    handle.pause().await;
                    tokio::time::sleep(HANDOFF).await;
                    handle.stop(true).await
                }
            });
            // A second signal means now: exit without waiting for them (their
            // transactions roll back with the connections; actix would only
            // queue a second stop behind the first).
            tokio::select! {
                _ = graceful => {}
                Some(signal) = shutdown_signal() => stop_now(signal),
            }
        })
    }

    pub fn port(&self) -> u16 {
        self.listening.address.port()
    }

    pub fn listening(&self) -> Listening {
        self.listening
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Sweeps of parked events finished (the first runs at start-up).
    pub fn drain_sweeps(&self) -> u64 {
        self.context.drain.sweeps()
    }

    /// Serves until stopped ([`Application::stop_on_signals`]), finishing
    /// requests in flight (each one's transaction commits or rolls back as a
    /// whole), then closes the pool.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let result = self.server.await;
        self.background.abort();
        // Sends in flight finish, or hand their leases back; nothing is
        // marked delivered that was not acknowledged.
        self.relays.stop().await;
        // What the last window did not log is still said.
        for overflow in self.context.log_budget.roll() {
            tracing::warn!("{}", overflow.describe("window before shutdown"));
        }
        // Idle connections close at once; one still inside a statement (a
        // SQLite writer in the busy handler, say) is not waited for beyond
        // the bound: exiting drops it, and its uncommitted transaction rolls
        // back on both backends, as after a crash.
        if tokio::time::timeout(POOL_CLOSE_GRACE, self.store.close())
            .await
            .is_err()
        {
            tracing::warn!(
                "a database connection was still busy at exit; its transaction rolls back"
            );
        }
        result
    }
}

/// Connects to the database, migrates it, and moves each source's rows
/// into its configured scope; says what stays under a destination no
/// longer configured.
async fn open_store(config: &Config, now: DateTime<Utc>) -> Result<Store, StartupError> {
    let store = connect_store(config).await?;
    let schema = store.migrate().await?;
    if !schema.newer.is_empty() {
        // A rolling upgrade: a newer release has migrated, and this one
        // still serves beside it.
        tracing::warn!("{}", schema.describe());
    }
    place_in_scopes(&store, &config.sources, now).await?;
    crate::outbox::warn_of_unconfigured(&store).await;
    Ok(store)
}

/// The destinations' relays (none with `serve --no-relay`: this process
/// then only tells the other instances of its commits). At shutdown they
/// stop after the requests in flight: their sends get a short grace of
/// their own, then hand their leases back.
fn spawn_relays(config: &Config, store: &Store, metrics: OutboxInstruments) -> Relays {
    let grace = config.shutdown_timeout.min(crate::outbox::SHUTDOWN_GRACE);
    let destinations = if config.run_relays {
        &config.destinations[..]
    } else {
        &[]
    };
    Relays::spawn(store, destinations, grace, metrics)
}

/// The longest a SIGTERM may take to end the process: the drain, the
/// handoff, requests in flight, the relays' sends, the pool's close. A
/// supervisor's stop timeout (systemd's `TimeoutStopSec`, Kubernetes'
/// `terminationGracePeriodSeconds`) must be longer, or its SIGKILL cuts
/// answers off.
pub fn longest_stop(drain: Duration, shutdown_timeout: Duration) -> Duration {
    drain
        + HANDOFF
        + shutdown_timeout
        + shutdown_timeout.min(crate::outbox::SHUTDOWN_GRACE)
        + POOL_CLOSE_GRACE
}

/// How long accepted connections get to reach their workers after
/// accepting stops and before the workers stop.
const HANDOFF: Duration = Duration::from_millis(200);

/// At exit, how long the pool may take to close its connections.
const POOL_CLOSE_GRACE: Duration = Duration::from_secs(2);

/// Moves each source's rows into its configured scope before serving, and
/// says what stayed behind.
async fn place_in_scopes(
    store: &Store,
    sources: &[crate::source::Source],
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let pairs: Vec<(&str, &str)> = sources
        .iter()
        .map(|s| (s.name.as_str(), s.scope.as_str()))
        .collect();
    for ((source, scope), done) in pairs.iter().zip(store.rescope(&pairs).await?) {
        if done.intents_moved > 0 || done.payments_moved > 0 {
            tracing::info!(
                source,
                scope,
                intents = done.intents_moved,
                payments = done.payments_moved,
                "moved into the source's scope"
            );
        }
        if done.intents_left > 0 {
            tracing::warn!(
                source,
                scope,
                intents = done.intents_left,
                "events of this source stay in their earlier scope: another source recorded \
                 the same event ids in this scope (before they shared it); check their \
                 payments for a double credit"
            );
        }
    }
    // Reversals that waited in a scope that has just received their
    // payment's credit (a merge of scopes).
    let mut released_scopes = std::collections::HashSet::new();
    for source in sources {
        if released_scopes.insert(source.scope.as_str()) {
            let released = crate::ingest::release_stranded(store, source, now).await?;
            if released > 0 {
                tracing::info!(
                    scope = source.scope.as_str(),
                    released,
                    "applied reversals that waited for a payment credited in another scope before"
                );
            }
        }
    }
    Ok(())
}

/// The longest one request may take: its head and its body within the
/// read deadline each, then the handler's worst healthy case (a pooled
/// connection, then statements up to their timeout). A kept-alive
/// connection that answers when older than this less twice the read
/// deadline is closed after that answer: a next request's head would start
/// within twice the read deadline (`HeadDeadline`) and the request end
/// within this, so no connection outlives twice this.
fn connection_lifetime(config: &Config) -> Duration {
    let database = &config.database;
    2 * config.limits.read_timeout
        + database.acquire_timeout
        + database.statement_timeout.max(database.busy_timeout)
}

/// Exits at once: requests in flight are cut off, and their transactions
/// roll back with their connections.
fn stop_now(signal: &'static str) -> ! {
    tracing::warn!(signal, "stopping now: requests in flight are cut off");
    std::process::exit(130);
}

/// The first of SIGTERM and SIGINT, by name; `None` if neither can be
/// listened for (the server then runs until killed).
pub async fn shutdown_signal() -> Option<&'static str> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).ok()?;
    let mut interrupt = signal(SignalKind::interrupt()).ok()?;
    tokio::select! {
        _ = term.recv() => Some("SIGTERM"),
        _ = interrupt.recv() => Some("SIGINT"),
    }
}
