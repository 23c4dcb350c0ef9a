//! The server under test: this binary's `serve`, on a config of its own,
//! logging to a file next to it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the server may take to open (and migrate) its database.
const START_WAIT: Duration = Duration::from_secs(60);

/// How long the server's start-up ledger check may take: it reads the
/// whole ledger, about a minute at 10 million stored events.
const CHECK_WAIT: Duration = Duration::from_secs(1_800);

/// Writes the bench's config: one `bench` source, the given database and
/// pool size, a free local port, the defaults for everything else; with
/// `sink` (a name and a URL), an `http` destination there for every
/// posting; with `payments`, the source reads each credit's payment id
/// (and with `refunds`, each debit's, applying late ones); with
/// `numbered`, it is `contiguous`.
pub fn write_config(
    folder: &Path,
    database: &str,
    (secret, pool): (&str, u32),
    sink: Option<(&str, &str)>,
    (payments, refunds, numbered): (bool, bool, bool),
) -> Result<PathBuf, String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free local port: {e}"))?
        .port();
    let mut text = format!(
        "listen = \"127.0.0.1:{port}\"\n\
         database_url = {database:?}\n\
         data_dir = {data:?}\n\
         [database]\n\
         max_connections = {pool}\n\
         [[sources]]\n\
         name = \"bench\"\n\
         kind = \"standard-webhooks\"\n\
         secrets = [{secret:?}]\n",
        data = folder.join("data").display().to_string(),
    );
    if payments {
        text.push_str("payment_path = \"data.payment_id\"\n");
    }
    if refunds {
        text.push_str("reverses_path = \"data.payment_id\"\non_stale = \"apply\"\n");
    }
    if numbered {
        text.push_str("ordering = \"contiguous\"\n");
    }
    if let Some((name, url)) = sink {
        text.push_str(&format!(
            "[[destinations]]\n\
             name = {name:?}\n\
             kind = \"http\"\n\
             url = {url:?}\n\
             secret = {secret:?}\n\
             events = [\"ledger.posted\"]\n"
        ));
    }
    let path = folder.join("hookledger.toml");
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

pub struct Server {
    child: Child,
    log: PathBuf,
}

impl Server {
    /// Starts `hookledger serve` (this binary's, or `binary`; with
    /// `--no-relay` if `no_relay`) and waits until `/readyz` answers 200.
    pub async fn start(
        config: &Path,
        listen: &str,
        binary: Option<&Path>,
        no_relay: bool,
    ) -> Result<Self, String> {
        let args: &[&str] = match no_relay {
            true => &["serve", "--no-relay"],
            false => &["serve"],
        };
        let mut server = Self::spawn(config, binary, args, "server.log")?;
        let ready = format!("http://{listen}/readyz");
        let client = crate::tls::build_client(|builder| builder)?;
        let deadline = Instant::now() + START_WAIT;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!(
                    "the server exited ({status}):\n{}",
                    server.log_text()
                ));
            }
            if let Ok(answer) = client.get(&ready).send().await
                && answer.status().is_success()
            {
                server.wait_for_first_check(listen, &client).await?;
                return Ok(server);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        server.child.kill().ok();
        Err(format!(
            "the server was not ready within 60 s:\n{}",
            server.log_text()
        ))
    }

    /// Waits until the server's start-up ledger check is done (its age is
    /// in `/metrics`), so that no phase measures deliveries beside a
    /// whole-ledger read; then says on stderr how long that took.
    async fn wait_for_first_check(
        &mut self,
        listen: &str,
        client: &reqwest::Client,
    ) -> Result<(), String> {
        let metrics = format!("http://{listen}/metrics");
        let started = Instant::now();
        while started.elapsed() < CHECK_WAIT {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "the server exited ({status}):\n{}",
                    self.log_text()
                ));
            }
            if let Ok(answer) = client.get(&metrics).send().await
                && let Ok(text) = answer.text().await
                && text.contains("hookledger_invariant_check_age_seconds")
            {
                eprintln!(
                    "the server's start-up ledger check was done {:.1} s after /readyz",
                    started.elapsed().as_secs_f64()
                );
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        self.child.kill().ok();
        Err(format!(
            "the server's start-up ledger check did not end within {} s",
            CHECK_WAIT.as_secs()
        ))
    }

    /// Starts `hookledger relay` (this binary's, or `binary`) on the same
    /// config: it has nothing to answer, so it is not waited for.
    pub fn start_relay(config: &Path, binary: Option<&Path>) -> Result<Self, String> {
        Self::spawn(config, binary, &["relay"], "relay.log")
    }

    fn spawn(
        config: &Path,
        binary: Option<&Path>,
        args: &[&str],
        log_name: &str,
    ) -> Result<Self, String> {
        let log = config.with_file_name(log_name);
        let file = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        let binary = match binary {
            Some(binary) => binary.to_path_buf(),
            None => std::env::current_exe().map_err(|e| e.to_string())?,
        };
        let child = Command::new(binary)
            .args(args)
            .env("HOOKLEDGER_CONFIG", config)
            .stdout(Stdio::from(file.try_clone().map_err(|e| e.to_string())?))
            .stderr(Stdio::from(file))
            .spawn()
            .map_err(|e| format!("cannot start hookledger {}: {e}", args[0]))?;
        Ok(Self { child, log })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The database line of the server's banner.
    pub fn database(&self) -> String {
        self.log_text()
            .lines()
            .find_map(|l| {
                let at = l.find("SQLite at").or_else(|| l.find("PostgreSQL at"))?;
                Some(l[at..].trim().to_owned())
            })
            .unwrap_or_default()
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops the server at once: everything it answered 200 is committed.
    pub async fn stop(&mut self) {
        self.child.kill().ok();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        let _ = self.child.wait();
    }
}
