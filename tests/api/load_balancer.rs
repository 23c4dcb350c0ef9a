//! Three instances on one PostgreSQL database behind haproxy, with the
//! shipped `deploy/haproxy/haproxy.cfg`, under 32 at-least-once senders
//! that reach only haproxy. One instance is SIGKILLed (and started again
//! later); another is drained with SIGTERM and restarted, as a rolling
//! deploy does. Nothing is lost or doubled, the ledger check is clean, and
//! the share of attempts not answered 2xx is measured and printed (the
//! book's load-balancing page has the figures). PostgreSQL only: several
//! instances share a PostgreSQL database, never an SQLite file.

use std::time::Duration;

use crate::at_least_once::{Load, Target, assert_exact, senders_config};
use crate::haproxy::Haproxy;
use crate::helpers::{Backend, DEMO_SECRET};
use crate::localstripe::free_port;
use crate::postgres::TestDatabase;
use crate::process::Server;

/// Instance `n` in its own folder, on its own fixed port (so that a
/// restart is where haproxy looks).
struct Instance {
    home: std::path::PathBuf,
    port: u16,
    env: Vec<(&'static str, String)>,
}

impl Instance {
    fn start(&self) -> Server {
        let listen = format!("127.0.0.1:{}", self.port);
        let mut env: Vec<(&str, &str)> = self.env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        env.push(("HOOKLEDGER_LISTEN", &listen));
        Server::start(&self.home, &env, "source demo")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_instances_behind_haproxy_lose_nothing_when_one_dies_and_one_restarts() {
    let test =
        "load_balancer::three_instances_behind_haproxy_lose_nothing_when_one_dies_and_one_restarts";
    let Some(Backend::Postgres(url)) = Backend::postgres_or_skip(test) else {
        return;
    };
    let database = TestDatabase::create(&url).await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookledger.toml");
    std::fs::write(&config, senders_config("")).unwrap();
    let env = vec![
        ("HOOKLEDGER_CONFIG", config.display().to_string()),
        ("HOOKLEDGER_DATABASE_URL", database.url.clone()),
        ("HOOKLEDGER_DRAIN_SECS", "3".to_owned()),
        ("HOOKLEDGER_WORKERS", "2".to_owned()),
    ];
    let instances: Vec<Instance> = (1..=3)
        .map(|n| {
            let home = dir.path().join(format!("hookledger{n}"));
            std::fs::create_dir_all(&home).unwrap();
            Instance {
                home,
                port: free_port(),
                env: env.clone(),
            }
        })
        .collect();
    let mut running: Vec<Server> = instances.iter().map(Instance::start).collect();
    let port = free_port();
    let names = ["hookledger1", "hookledger2", "hookledger3"];
    let servers: Vec<(&str, u16)> = names
        .iter()
        .copied()
        .zip(instances.iter().map(|i| i.port))
        .collect();
    let haproxy = Haproxy::start("haproxy.cfg", dir.path(), port, &servers);
    let all_up: Vec<(&str, &str)> = names.iter().map(|n| (*n, "UP")).collect();
    haproxy.until(&all_up).await;

    let load = Load::start(
        &Target::new(&format!("http://127.0.0.1:{port}"), DEMO_SECRET),
        "balanced",
        32,
        20,
    );
    load.until_acknowledged(300, Duration::from_secs(60)).await;
    let before = load.answers();

    // One dies.
    running[0].kill();
    haproxy.until(&[("hookledger1", "DOWN")]).await;
    load.until_acknowledged(300, Duration::from_secs(60)).await;
    let after_kill = load.answers();

    // One drains and restarts, as a deploy does.
    running[1].signal("TERM");
    haproxy.until(&[("hookledger2", "DOWN")]).await;
    let status = running[1]
        .exit_status(Duration::from_secs(30))
        .expect("exits");
    assert!(status.success(), "{status:?}");
    running[1] = instances[1].start();
    haproxy.until(&[("hookledger2", "UP")]).await;
    load.until_acknowledged(300, Duration::from_secs(60)).await;
    let after_restart = load.answers();

    // The dead one back.
    running[0] = instances[0].start();
    haproxy.until(&all_up).await;
    load.until_acknowledged(300, Duration::from_secs(60)).await;
    let mut tally = load.finish().await;
    tally.proxy_retries = true;
    let answers = tally.answers;
    eprintln!(
        "load balancer: before {before}; to the kill's end {after_kill}; to the restart's end \
         {after_restart}; in all {answers}"
    );
    assert_eq!(answers.refused, 0, "haproxy always listens: {answers}");
    // haproxy retries what a dead or draining instance did not answer on
    // another (the config's retry-on): no 5xx but 503, no cut connection.
    assert_eq!(
        (
            answers.server_errors,
            answers.client_errors,
            answers.transport
        ),
        (0, 0, 0),
        "{answers}"
    );
    drop(running);
    let store = crate::postgres::side_store(&database.url).await;
    assert_exact(&store, &tally).await;
}
