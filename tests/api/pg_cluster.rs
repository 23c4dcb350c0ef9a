//! PostgreSQL servers of a test's own, for the faults the shared server on
//! 5432 must never see (a primary killed, a standby promoted, commits
//! waiting for a standby): made with `initdb` (and `pg_basebackup` for a
//! standby) from `pg_config --bindir`, under a temporary folder, on free
//! ports, run as the `postgres` user when the test runs as root (initdb
//! refuses root), stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::localstripe::free_port;
use sqlx::Connection;

/// Settings every node gets. `fsync = off`: the faults here kill processes,
/// never the machine, and the page cache keeps what they wrote.
const SETTINGS: &str = "
listen_addresses = '127.0.0.1'
fsync = off
shared_buffers = 32MB
max_connections = 200
wal_level = replica
max_wal_senders = 5
wal_keep_size = 256MB
wal_log_hints = on
hot_standby = on
log_line_prefix = '%m [%p] %a '
";

/// One PostgreSQL server (a data folder and its postmaster).
pub struct Node {
    pub name: String,
    pub port: u16,
    data: PathBuf,
    folder: PathBuf,
}

/// The folder the nodes live in; owned by `postgres` when run as root.
pub struct Cluster {
    folder: tempfile::TempDir,
    bin: PathBuf,
    as_postgres: bool,
}

fn run(command: &mut Command) -> Output {
    let output = command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{command:?} runs: {e}"));
    assert!(
        output.status.success(),
        "{command:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

impl Cluster {
    pub fn new() -> Cluster {
        let bindir = run(Command::new("pg_config").arg("--bindir"));
        let bin = PathBuf::from(String::from_utf8(bindir.stdout).unwrap().trim());
        let root = run(Command::new("id").arg("-u"));
        let as_postgres = String::from_utf8_lossy(&root.stdout).trim() == "0";
        let folder = tempfile::tempdir().unwrap();
        if as_postgres {
            run(Command::new("chown")
                .arg("postgres:postgres")
                .arg(folder.path()));
        }
        Cluster {
            folder,
            bin,
            as_postgres,
        }
    }

    /// A program of PostgreSQL's, as the user that owns the data.
    fn tool(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(path);
            command
        } else {
            Command::new(path)
        }
    }

    fn node(&self, name: &str) -> Node {
        Node {
            name: name.to_owned(),
            port: free_port(),
            data: self.folder.path().join(name),
            folder: self.folder.path().to_owned(),
        }
    }

    /// A new primary with `extra` settings, started.
    pub fn primary(&self, name: &str, extra: &str) -> Node {
        let node = self.node(name);
        run(self
            .tool("initdb")
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "-D"])
            .arg(&node.data));
        let conf = format!(
            "{SETTINGS}\nport = {}\nunix_socket_directories = '{}'\n{extra}\n",
            node.port,
            node.folder.display()
        );
        self.append(&node.data.join("postgresql.conf"), &conf);
        self.append(
            &node.data.join("pg_hba.conf"),
            "host replication all 127.0.0.1/32 trust\n",
        );
        self.start(&node);
        node
    }

    /// A streaming standby of `primary` named `name` (its
    /// `application_name`, which `synchronous_standby_names` names),
    /// started.
    pub fn standby(&self, primary: &Node, name: &str) -> Node {
        let node = self.node(name);
        run(self
            .tool("pg_basebackup")
            .args([
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
            ])
            .arg(format!("--port={}", primary.port))
            .arg(format!("--dbname=application_name={name}"))
            .arg("-D")
            .arg(&node.data));
        self.set_port(&node);
        self.start(&node);
        node
    }

    /// `node`'s own port in its copied settings (the last one counts).
    fn set_port(&self, node: &Node) {
        self.append(
            &node.data.join("postgresql.conf"),
            &format!("port = {}\n", node.port),
        );
    }

    fn append(&self, file: &Path, text: &str) {
        let mut old = std::fs::read_to_string(file).unwrap();
        old.push_str(text);
        std::fs::write(file, old).unwrap();
    }

    pub fn start(&self, node: &Node) {
        let started = self
            .tool("pg_ctl")
            .args(["-w", "-t", "60", "-D"])
            .arg(&node.data)
            .arg("-l")
            .arg(node.log())
            .arg("start")
            .stdin(Stdio::null())
            .output()
            .expect("pg_ctl runs");
        assert!(
            started.status.success(),
            "{} did not start: {}",
            node.name,
            node.server_log()
        );
    }

    /// `pg_ctl promote`, waiting until the node takes writes.
    pub fn promote(&self, node: &Node) {
        run(self
            .tool("pg_ctl")
            .args(["-w", "-t", "60", "-D"])
            .arg(&node.data)
            .arg("promote"));
    }

    /// The old primary, back as a standby of `primary` (as Patroni brings
    /// one back): `pg_rewind` drops what it wrote that `primary` never had
    /// (it runs crash recovery first), then it follows `primary` under
    /// its own name.
    pub async fn rejoin_as_standby(&self, node: &Node, primary: &Node) {
        // pg_rewind reads the timeline from `primary`'s control file, which
        // a promotion updates only at its next checkpoint.
        primary.execute("checkpoint").await;
        let rewound = run(self
            .tool("pg_rewind")
            .arg("-D")
            .arg(&node.data)
            .arg(format!(
                "--source-server=host=127.0.0.1 port={} user=postgres dbname=postgres",
                primary.port
            )));
        let said = String::from_utf8_lossy(&rewound.stderr);
        assert!(!said.contains("no rewind required"), "{said}");
        // pg_rewind copied `primary`'s settings, its port among them.
        self.set_port(node);
        self.append(
            &node.data.join("postgresql.auto.conf"),
            &format!(
                "primary_conninfo = 'host=127.0.0.1 port={} user=postgres application_name={}'\n",
                primary.port, node.name
            ),
        );
        std::fs::write(node.data.join("standby.signal"), "").unwrap();
        if self.as_postgres {
            run(Command::new("chown")
                .arg("postgres:postgres")
                .arg(node.data.join("standby.signal")));
        }
        self.start(node);
    }
}

impl Node {
    fn log(&self) -> PathBuf {
        self.folder.join(format!("{}.log", self.name))
    }

    /// What the server has logged.
    pub fn server_log(&self) -> String {
        std::fs::read_to_string(self.log()).unwrap_or_default()
    }

    /// `postgres://postgres@127.0.0.1:<port>/<database>`, without TLS.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/{database}?sslmode=disable",
            self.port
        )
    }

    /// SIGKILL to the postmaster: the server is gone at once, as a crashed
    /// host's is (its backends exit when they see it gone).
    pub fn kill(&self) {
        let pid = std::fs::read_to_string(self.data.join("postmaster.pid")).unwrap();
        let pid = pid.lines().next().unwrap().trim().to_owned();
        run(Command::new("kill").args(["-KILL", &pid]));
    }

    pub async fn connect(&self) -> sqlx::PgConnection {
        sqlx::PgConnection::connect(&self.url("postgres"))
            .await
            .unwrap_or_else(|e| panic!("{} answers: {e}", self.name))
    }

    /// Runs `sql` (settings, `alter system`, a database) on the node.
    pub async fn execute(&self, sql: &str) {
        let mut conn = self.connect().await;
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{sql} on {}: {e}", self.name));
    }

    /// `alter system set <setting>` and a reload, and until a new
    /// connection has it: the reload is signalled, not waited for, and
    /// under load a commit a moment later could still run under the old
    /// value. A new connection forks from the postmaster, which has then
    /// reloaded and signalled every connection it had.
    pub async fn set(&self, setting: &str, value: &str) {
        self.execute(&format!("alter system set {setting} = '{value}'"))
            .await;
        self.execute("select pg_reload_conf()").await;
        self.until(
            &format!("select current_setting('{setting}') = '{value}'"),
            Duration::from_secs(10),
        )
        .await;
    }

    /// Until `sql` (one boolean) is true on the node, failing after `within`.
    pub async fn until(&self, sql: &str, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let mut conn = self.connect().await;
            let done: bool = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
                .fetch_one(&mut conn)
                .await
                .unwrap();
            if done {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                let log = self.server_log();
                let tail: Vec<&str> = log.lines().rev().take(20).collect();
                panic!("{} never: {sql}; its log ends: {tail:#?}", self.name);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let Ok(nodes) = std::fs::read_dir(self.folder.path()) else {
            return;
        };
        for data in nodes.flatten().map(|n| n.path()) {
            if data.join("postmaster.pid").exists() {
                let _ = self
                    .tool("pg_ctl")
                    .args(["-m", "immediate", "-D"])
                    .arg(&data)
                    .arg("stop")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}
