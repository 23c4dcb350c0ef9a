//! The test harness: spawns the real server on port 0 against a fresh
//! database (a temporary SQLite file, or a newly created PostgreSQL database),
//! signs requests with the same code as `hookledger send`, and checks the
//! ledger invariants after every scenario.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use hookledger::cli::{SignedRequest, sign_body, signed_sample};
use hookledger::clock::{Clock, ManualClock};
use hookledger::config::from_toml;
use hookledger::providers::Sample;
use hookledger::secret::Secret;
use hookledger::startup::Application;
use hookledger::store::Store;
use reqwest::{Response, StatusCode};
use serde_json::Value;

pub use crate::answers::{assert_error, json_with_status, percent_encode};
pub use crate::app_config::{Options, base_config};
pub use crate::backend::Backend;
use crate::postgres::TestDatabase;
pub use crate::samples::{body_of, credit, credit_at, credit_seq, debit_seq};

/// Secrets of the sources every test app has.
pub const DEMO_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
pub const DEMO_OLD_SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
pub const ROTATED_OUT_SECRET: &str = "whsec_dGhpcyBvbmUgd2FzIHJldGlyZWQgbG9uZyBhZ28=";
pub const STRIPE_SECRET: &str = "whsec_stripe_test_secret";
pub const ADMIN_TOKEN: &str = "test-admin-token-0123456789abcdef";

/// The fixed "now" of every test app.
pub fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap()
}

/// A new, empty database: its URL and what keeps it alive.
async fn new_database(
    backend: Backend,
) -> (String, Option<tempfile::TempDir>, Option<TestDatabase>) {
    match backend {
        Backend::Sqlite => {
            let dir = tempfile::tempdir().expect("temp dir");
            let url = format!("sqlite://{}/hookledger.db", dir.path().display());
            (url, Some(dir), None)
        }
        Backend::Postgres(server_url) => {
            let database = TestDatabase::create(&server_url).await;
            (database.url.clone(), None, Some(database))
        }
    }
}

pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    pub clock: Arc<ManualClock>,
    pub database_url: String,
    store: Store,
    _sqlite_dir: Option<tempfile::TempDir>,
    _postgres: Option<TestDatabase>,
}

impl TestApp {
    pub async fn spawn(backend: Backend) -> TestApp {
        Self::spawn_with(backend, Options::default()).await
    }

    pub async fn spawn_with(backend: Backend, options: Options<'_>) -> TestApp {
        Self::spawn_prepared(backend, options, |_| async {}).await
    }

    /// Like [`TestApp::spawn_with`], with `prepare` run on the new, empty
    /// database before the app starts on it (an older schema, say).
    pub async fn spawn_prepared<F, Fut>(
        backend: Backend,
        options: Options<'_>,
        prepare: F,
    ) -> TestApp
    where
        F: FnOnce(String) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let (database_url, sqlite_dir, postgres) = new_database(backend).await;
        prepare(database_url.clone()).await;
        let mut app = Self::start(database_url, &options).await;
        app._sqlite_dir = sqlite_dir;
        app._postgres = postgres;
        app
    }

    /// `n` instances started at the same moment on one new database, as a
    /// deployment starts its replicas: all of them migrate at once.
    pub async fn spawn_at_once(backend: Backend, n: usize) -> Vec<TestApp> {
        let (database_url, sqlite_dir, postgres) = new_database(backend).await;
        let options = Options::default();
        let starts = (0..n).map(|_| Self::start(database_url.clone(), &options));
        let mut apps = futures::future::join_all(starts).await;
        apps[0]._sqlite_dir = sqlite_dir;
        apps[0]._postgres = postgres;
        apps
    }

    /// A second instance on this app's database, as in a deployment where
    /// several hookledger processes share one database.
    pub async fn another_instance(&self) -> TestApp {
        self.another_instance_with(&Options::default()).await
    }

    /// [`TestApp::another_instance`] with its own config `options`.
    pub async fn another_instance_with(&self, options: &Options<'_>) -> TestApp {
        Self::start(self.database_url.clone(), options).await
    }

    /// An instance on `database_url`, a database migrated already (a test
    /// that serves as another role than the one that migrated, say).
    pub async fn start_on(database_url: String) -> TestApp {
        Self::start(database_url, &Options::default()).await
    }

    async fn start(database_url: String, options: &Options<'_>) -> TestApp {
        let text = base_config(&database_url, options);
        keep_config_copy(&text);
        let mut config = from_toml(&text, &|_| None).expect("test config is valid");
        config.run_relays = !options.no_relay;
        let clock = Arc::new(ManualClock::new(now()));
        let app = Application::build(config, clock.clone())
            .await
            .expect("app starts");
        let address = format!("http://127.0.0.1:{}", app.port());
        let store = app.store().clone();
        // The start-up sweep of parked events is done before a test rigs
        // anything it could release.
        let started = std::time::Instant::now();
        while app.drain_sweeps() == 0 {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(30),
                "the start-up sweep did not finish"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        tokio::spawn(app.run_until_stopped());
        let client = hookledger::tls::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        TestApp {
            address,
            client,
            clock,
            database_url,
            store,
            _sqlite_dir: None,
            _postgres: None,
        }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    /// POSTs a signed request to `/webhooks/{source}`.
    pub async fn post_signed(&self, source: &str, signed: &SignedRequest) -> Response {
        self.post_signed_with(&self.client, source, signed).await
    }

    /// [`TestApp::post_signed`] through `client` (one bound to another
    /// local address, say).
    pub async fn post_signed_with(
        &self,
        client: &reqwest::Client,
        source: &str,
        signed: &SignedRequest,
    ) -> Response {
        let mut request = client
            .post(self.url(&format!("/webhooks/{source}")))
            .header("content-type", "application/json")
            .body(signed.body.clone());
        for (name, value) in &signed.headers {
            request = request.header(*name, value);
        }
        request.send().await.expect("request sent")
    }

    /// Signs `sample` as a `kind` sender with `secret` and delivers it.
    pub async fn deliver(
        &self,
        source: &str,
        kind: &str,
        secret: &str,
        sample: &Sample,
    ) -> Response {
        let signed = signed_sample(kind, &Secret::new(secret), sample).expect("sample signs");
        self.post_signed(source, &signed).await
    }

    /// Signs an arbitrary body as a Standard Webhooks sender with the demo
    /// secret at the test clock's time, and delivers it to `source`.
    pub async fn deliver_body(&self, source: &str, event_id: &str, body: &[u8]) -> Response {
        self.deliver_body_at(source, event_id, body, now().timestamp())
            .await
    }

    /// As [`TestApp::deliver_body`], signed at `timestamp`.
    pub async fn deliver_body_at(
        &self,
        source: &str,
        event_id: &str,
        body: &[u8],
        timestamp: i64,
    ) -> Response {
        let signed = sign_body(
            "standard-webhooks",
            &Secret::new(DEMO_SECRET),
            body.to_vec(),
            event_id,
            timestamp,
        )
        .expect("body signs");
        self.post_signed(source, &signed).await
    }

    /// Delivers a Standard Webhooks sample to the `demo` source.
    pub async fn send(&self, sample: &Sample) -> Response {
        self.deliver("demo", "standard-webhooks", DEMO_SECRET, sample)
            .await
    }

    /// [`TestApp::send`], expecting 200; returns the JSON answer.
    pub async fn send_ok(&self, sample: &Sample) -> Value {
        json_with_status(self.send(sample).await, StatusCode::OK).await
    }

    /// Delivers a Standard Webhooks sample to `source`, signed at the test
    /// clock's current time, expecting 200.
    pub async fn send_to(&self, source: &str, sample: &Sample) -> Value {
        let sample = Sample {
            timestamp: self.clock.now().timestamp(),
            ..sample.clone()
        };
        let response = self
            .deliver(source, "standard-webhooks", DEMO_SECRET, &sample)
            .await;
        json_with_status(response, StatusCode::OK).await
    }

    pub async fn admin_get(&self, path: &str) -> Response {
        self.client
            .get(self.url(path))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .expect("request sent")
    }

    pub async fn admin_post(&self, path: &str, body: &str) -> Response {
        self.client
            .post(self.url(path))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .await
            .expect("request sent")
    }

    /// The stored event, through the admin API.
    pub async fn event(&self, source: &str, event_id: &str) -> Value {
        // The query form takes any id (`.`, `/`, `%`, `?` included).
        let response = self
            .admin_get(&format!(
                "/admin/api/event?source={}&id={}",
                percent_encode(source),
                percent_encode(event_id)
            ))
            .await;
        json_with_status(response, StatusCode::OK).await
    }

    /// The events the admin API lists (newest first, up to 500).
    pub async fn events(&self) -> Vec<Value> {
        let response = self.admin_get("/admin/api/events?limit=500").await;
        let body = json_with_status(response, StatusCode::OK).await;
        body["events"].as_array().cloned().expect("an events array")
    }

    /// The balance in minor units, 0 for an account never credited.
    pub async fn balance(&self, account: &str, currency: &str) -> i64 {
        let response = self
            .admin_get(&format!("/admin/api/accounts/{account}"))
            .await;
        if response.status() == StatusCode::NOT_FOUND {
            return 0;
        }
        let body = json_with_status(response, StatusCode::OK).await;
        body["balances"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["currency"] == currency)
            .map_or(0, |b| b["balance_minor"].as_i64().unwrap())
    }

    /// The ledger entries of an account, newest first.
    pub async fn entries(&self, account: &str) -> Vec<Value> {
        let response = self
            .admin_get(&format!("/admin/api/accounts/{account}?limit=500"))
            .await;
        if response.status() == StatusCode::NOT_FOUND {
            return Vec::new();
        }
        let body = json_with_status(response, StatusCode::OK).await;
        body["entries"].as_array().cloned().unwrap()
    }

    /// Runs raw SQL against the app's database, for tests that must corrupt
    /// or rig state that no API can produce.
    pub async fn execute_sql(&self, sql: &'static str) -> Result<(), sqlx::Error> {
        match &self.store {
            Store::Sqlite(pool, ..) => sqlx::raw_sql(sql).execute(pool).await.map(drop),
            Store::Postgres(pool, ..) => sqlx::raw_sql(sql).execute(pool).await.map(drop),
        }
    }

    /// Balance = sum of ledger for every (account, currency); ledger entries
    /// and applied intents one to one; no key stored twice.
    pub async fn assert_invariants(&self) {
        let violations = self.store.check_invariants().await.expect("check runs");
        assert!(
            violations.is_empty(),
            "ledger invariants violated: {violations:#?}"
        );
    }
}

/// With `HOOKLEDGER_TEST_CONFIG_COPIES` set (as `.ci/run` sets it), a copy
/// of each config a test runs with is kept in that folder, one file per
/// distinct text, for taplo to check against the config's JSON Schema
/// after the suite.
pub fn keep_config_copy(text: &str) {
    let Some(dir) = std::env::var_os("HOOKLEDGER_TEST_CONFIG_COPIES") else {
        return;
    };
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir).expect("the config copies' folder can be made");
    std::fs::write(dir.join(format!("{:016x}.toml", hasher.finish())), text)
        .expect("a config copy can be written");
}

/// Writes a config file a test runs the binary with (and keeps a copy).
pub fn write_config(path: impl AsRef<Path>, text: impl AsRef<str>) -> std::io::Result<()> {
    keep_config_copy(text.as_ref());
    std::fs::write(path, text.as_ref())
}

/// The value of `var` naming a tool or service a test drives: `None` (the
/// test prints that it skipped) when unset, and a failure under CI, where
/// `.ci/run` sets it.
pub fn named_by_env(var: &str, test: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(value) if !value.is_empty() => Some(value),
        _ if std::env::var_os("CI").is_some() => {
            panic!("CI is set but {var} is not: {test} cannot run")
        }
        _ => {
            eprintln!("SKIPPED {test}: {var} is not set");
            None
        }
    }
}
