//! The path from the demo to a real config, as a first-time user walks it:
//! `init`, `check-config`, a banner that lists what runs, errors that say
//! what is wrong (all of them at once), `send --source`, plain-text logs.

use std::path::Path;

use crate::helpers::Backend;
use crate::postgres::TestDatabase;
use crate::process::{Server, hookledger};

fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let output = hookledger(dir)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `hookledger init --kind stripe` for a public host, as README runs it.
fn init_stripe(dir: &Path) -> (bool, String, String) {
    let args = [
        "init",
        "--kind",
        "stripe",
        "--public-url",
        "https://hooks.example.com",
    ];
    run(dir, &args, &[])
}

#[test]
fn every_config_problem_is_reported_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = "max_body_bytes = 0\n\
        [[sources]]\nname = \"stripe\"\nkind = \"stripe\"\n\
        secrets = [\"env:HL_TEST_A\", \"env:HL_TEST_B\"]\n\
        [[sources]]\nname = \"billing\"\nkind = \"nope\"\nsecrets = [\"x\"]\n";
    std::fs::write(dir.path().join("hookledger.toml"), config).unwrap();
    let (ok, _, stderr) = run(dir.path(), &[], &[("HL_TEST_B", "")]);
    assert!(!ok);
    assert!(!dir.path().join("data").exists(), "nothing was created");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines[0], "hookledger: 4 config errors:", "{stderr}");
    assert_eq!(
        lines[1..4],
        [
            "  hookledger.toml: max_body_bytes: must be between 1 and 67108864",
            "  hookledger.toml: sources[stripe].secrets[0]: environment variable HL_TEST_A is not set",
            "  hookledger.toml: sources[stripe].secrets[1]: environment variable HL_TEST_B is empty",
        ],
        "{stderr}"
    );
    // The unknown kind is the fourth; its message lists every kind.
    assert!(
        lines[4].starts_with(
            "  hookledger.toml: sources[billing].kind: unknown kind \"nope\" (known: "
        )
    );
}

/// `init` writes a config that runs with the one variable it names, and
/// refuses to write over it; `check-config` shows what will run without a
/// secret.
#[test]
fn init_writes_a_config_that_check_config_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, stdout, stderr) = init_stripe(dir.path());
    assert!(ok, "{stderr}");
    assert!(
        stdout.starts_with("wrote hookledger.toml: one stripe source, \"stripe\"\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("endpoint URL         https://hooks.example.com/webhooks/stripe"),
        "{stdout}"
    );
    assert!(
        stdout.contains("export STRIPE_WEBHOOK_SECRET=..."),
        "{stdout}"
    );
    let token = std::fs::read_to_string(dir.path().join("data/admin_token")).unwrap();
    assert!(
        stdout.contains(token.trim()),
        "the fresh admin token is shown"
    );

    let (again, _, refused) = run(dir.path(), &["init"], &[]);
    assert!(!again);
    assert_eq!(
        refused,
        "hookledger: hookledger.toml exists; init never writes over a config (move it away, or edit it)\n"
    );

    let (missing, _, why) = run(dir.path(), &["check-config"], &[]);
    assert!(!missing);
    assert!(
        why.contains("environment variable STRIPE_WEBHOOK_SECRET is not set"),
        "{why}"
    );
    let secret = "whsec_never_printed_0123";
    let (ok, report, stderr) = run(
        dir.path(),
        &["check-config"],
        &[("STRIPE_WEBHOOK_SECRET", secret)],
    );
    assert!(ok, "{stderr}");
    assert!(
        !report.contains(secret) && !report.contains(token.trim()),
        "{report}"
    );
    for expected in [
        "config                 hookledger.toml",
        "database               sqlite://data/hookledger.db",
        "source stripe          kind stripe, scope stripe, ordering high-water, POST http://127.0.0.1:8080/webhooks/stripe",
        "secret 1: environment variable STRIPE_WEBHOOK_SECRET",
        "admin token            generated, kept in data/admin_token",
        "ok: 1 source(s)",
    ] {
        assert!(report.contains(expected), "{expected:?} in {report}");
    }
}

/// With a config file the banner names the file, the database as the store
/// opened it (an `sqlite:` URL without `//` is SQLite, not PostgreSQL),
/// every source's endpoint and the admin URL; `GET /` names the
/// endpoints; `send --source` needs nothing but the source's name; the log
/// file has no colour codes.
async fn the_banner_lists_what_runs(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let postgres = match &backend {
        Backend::Postgres(url) => Some(TestDatabase::create(url).await),
        Backend::Sqlite => None,
    };
    let database_url = postgres
        .as_ref()
        .map_or_else(|| "sqlite:data/other.db".to_owned(), |p| p.url.clone());
    let config = format!(
        "database_url = \"{database_url}\"\n\
         [[sources]]\nname = \"shop\"\nkind = \"standard-webhooks\"\n\
         secrets = [\"env:SHOP_WEBHOOK_SECRET\"]\n"
    );
    crate::helpers::write_config(dir.path().join("hookledger.toml"), config).unwrap();
    let secret = (
        "SHOP_WEBHOOK_SECRET",
        "whsec_YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4",
    );
    let server = Server::start(dir.path(), &[secret], "source shop");
    let base = server.base();
    let banner = server.banner.join("\n");
    let database = match &postgres {
        Some(p) => format!("PostgreSQL at 127.0.0.1:5432/{} as postgres", p.name),
        None => "SQLite at data/other.db".to_owned(),
    };
    for expected in [
        format!("  admin page           {base}/admin"),
        format!("  database             {database}"),
        "  config               hookledger.toml".to_owned(),
        format!("  source shop          POST {base}/webhooks/shop (standard-webhooks)"),
    ] {
        assert!(banner.contains(&expected), "{expected:?} in\n{banner}");
    }
    let index = hookledger::tls::client()
        .get(format!("{base}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(index.status(), reqwest::StatusCode::OK);
    assert!(
        index
            .text()
            .await
            .unwrap()
            .contains("POST /webhooks/{source}")
    );

    let (ok, stdout, stderr) = run(
        dir.path(),
        &[
            "send",
            "--source",
            "shop",
            "--url",
            &format!("{base}/webhooks/shop"),
        ],
        &[secret],
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains(r#""status":"applied""#), "{stdout}");
    let account = server
        .admin(
            std::fs::read_to_string(dir.path().join("data/admin_token"))
                .unwrap()
                .trim(),
            "/admin/api/accounts/acct_1",
        )
        .await;
    assert_eq!(
        account["balances"][0]["balance_minor"], 1500,
        "the defaults"
    );
    let log = server.log();
    assert!(log.contains("webhook received"), "{log}");
    assert!(!log.contains('\u{1b}'), "no colour codes in a file: {log}");
}

crate::both_backends!(the_banner_lists_what_runs);

#[test]
fn send_says_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "send",
                "--url",
                "http://127.0.0.1:1/webhooks/demo",
                "--secret",
                "whsec_YWJj",
            ],
            "hookledger: cannot connect to http://127.0.0.1:1/webhooks/demo: connection refused (is hookledger running there?)\n",
        ),
        (
            &[
                "send",
                "--url",
                "https://example.com/webhooks/demo",
                "--secret",
                "whsec_YWJj",
            ],
            "hookledger: https://example.com/webhooks/demo: send speaks plain HTTP only (http://...); send to the instance itself, not through a TLS proxy\n",
        ),
        (
            &[
                "send", "--url", "http://x", "--secret", "s", "--kind", "strype",
            ],
            "unknown --kind \"strype\" (known: stripe, ",
        ),
        (
            &["send", "--source", "nope"],
            "hookledger: no source \"nope\" in the config (configured: demo, demo-ordered)\n",
        ),
    ];
    for (args, expected) in cases {
        let (ok, _, stderr) = run(dir.path(), args, &[]);
        assert!(!ok, "{args:?}");
        if expected.ends_with('\n') {
            assert_eq!(stderr, expected, "{args:?}");
        } else {
            assert!(stderr.contains(expected), "{expected:?} in {stderr}");
        }
    }
}

/// Database errors name what was tried and what failed, and fail at once.
#[test]
fn database_errors_say_what_failed() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = vec![
        (
            "sqlite:///nonexistent-hookledger-folder/x.db".to_owned(),
            "hookledger: cannot open the database: SQLite at /nonexistent-hookledger-folder/x.db (database_url): folder /nonexistent-hookledger-folder does not exist\n".to_owned(),
        ),
        (
            "postgres://postgres@127.0.0.1:1/hl".to_owned(),
            "hookledger: cannot open the database: PostgreSQL at 127.0.0.1:1/hl as postgres (database_url): connection refused\n".to_owned(),
        ),
    ];
    if let Some(Backend::Postgres(url)) =
        Backend::postgres_or_skip("database_errors_say_what_failed")
    {
        let server = url.rsplit_once('/').map_or(url.as_str(), |(s, _)| s);
        let host = server.rsplit_once('@').map_or(server, |(_, h)| h);
        cases.push((
            format!("postgres://hookledger_no_such_role@{host}/postgres?sslmode=disable"),
            "hookledger: cannot open the database: PostgreSQL at 127.0.0.1:5432/postgres as hookledger_no_such_role (database_url): authentication failed for user hookledger_no_such_role\n".to_owned(),
        ));
        cases.push((
            format!("{server}/hookledger_no_such_database?sslmode=disable"),
            "hookledger: cannot open the database: PostgreSQL at 127.0.0.1:5432/hookledger_no_such_database as postgres (database_url): database hookledger_no_such_database does not exist\n".to_owned(),
        ));
    }
    // A path that climbs out of data_dir with `..` is never created.
    let escape = format!(
        "hookledger-escape-{}",
        dir.path().file_name().unwrap().to_string_lossy()
    );
    let climbing = format!("sqlite://data/../../{escape}/x.db");
    let (ok, _, stderr) = run(
        dir.path(),
        &["migrate"],
        &[("HOOKLEDGER_DATABASE_URL", &climbing)],
    );
    assert!(!ok);
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(
        !dir.path().join("..").join(&escape).exists(),
        "a folder outside data_dir was created"
    );
    for (url, expected) in cases {
        // The pool would wait 60 s for a connection: the error comes from
        // the one direct attempt made first, long before.
        let started = std::time::Instant::now();
        let env = [
            ("HOOKLEDGER_DATABASE_URL", url.as_str()),
            ("HOOKLEDGER_DATABASE_ACQUIRE_TIMEOUT_SECS", "60"),
        ];
        let (ok, _, stderr) = run(dir.path(), &["migrate"], &env);
        assert!(!ok, "{url}");
        assert_eq!(stderr, expected, "{url}");
        assert!(
            started.elapsed().as_secs() < 30,
            "{url}: not the pool's timeout"
        );
    }
    assert!(
        !Path::new("/nonexistent-hookledger-folder").exists(),
        "no folder was created outside data_dir"
    );
}

/// README's "From the demo to a real provider", step by step (the port is
/// the test's, hence `--url`), on the SQLite the config names.
#[tokio::test]
async fn the_readme_path_runs_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, stderr) = init_stripe(dir.path());
    assert!(ok, "{stderr}");
    let secret = ("STRIPE_WEBHOOK_SECRET", "whsec_from_the_dashboard");
    let (ok, report, stderr) = run(dir.path(), &["check-config"], &[secret]);
    assert!(
        ok && report.ends_with("ok: 1 source(s)\n"),
        "{report}{stderr}"
    );
    let server = Server::start(dir.path(), &[secret], "source stripe");
    let url = format!("{}/webhooks/stripe", server.base());
    let (ok, stdout, stderr) = run(
        dir.path(),
        &[
            "send",
            "--source",
            "stripe",
            "--event-id",
            "evt_first",
            "--url",
            &url,
        ],
        &[secret],
    );
    assert!(ok, "{stderr}");
    assert!(
        stdout.starts_with("sent evt_first (stripe) -> HTTP 200 OK\n"),
        "{stdout}"
    );
    assert!(stdout.contains(r#""status":"applied""#), "{stdout}");
    let token = std::fs::read_to_string(dir.path().join("data/admin_token")).unwrap();
    let event = server
        .admin(token.trim(), "/admin/api/events/stripe/evt_first")
        .await;
    assert_eq!(event["status"], "applied");
    let page = hookledger::tls::client()
        .get(format!("{}/admin", server.base()))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), reqwest::StatusCode::OK, "the sign-in page");
}
