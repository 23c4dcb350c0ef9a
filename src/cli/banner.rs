//! What the person who started hookledger needs to see: where it listens,
//! the admin URL, the database it opened (as the store describes it, never
//! guessed from the URL), the config file, every source's endpoint, and
//! for self-managed secrets only, the values to use.

use std::net::IpAddr;

use crate::config::Config;
use crate::startup::Listening;

/// Label column width.
const LABEL: usize = 20;

pub struct Banner {
    host: String,
    listen_port: Option<u16>,
    file: Option<String>,
    managed: Vec<(String, String, String)>,
    sources: Vec<(String, String)>,
    demo: bool,
    warnings: Vec<String>,
}

impl From<&Config> for Banner {
    fn from(config: &Config) -> Self {
        let (host, port) = config.listen.rsplit_once(':').unwrap_or(("127.0.0.1", ""));
        let host = match host {
            "0.0.0.0" | "[::]" | "" => "127.0.0.1",
            host => host,
        };
        Self {
            host: host.to_owned(),
            listen_port: port.parse().ok(),
            file: config.file.as_ref().map(|f| f.display().to_string()),
            managed: config
                .self_managed
                .iter()
                .map(|m| {
                    (
                        m.what.to_owned(),
                        m.secret.expose().to_owned(),
                        m.file.display().to_string(),
                    )
                })
                .collect(),
            sources: config
                .sources
                .iter()
                .map(|s| {
                    let ordering = match s.ordering.mode {
                        crate::domain::OrderingMode::Contiguous => ", contiguous ordering",
                        crate::domain::OrderingMode::HighWater => "",
                    };
                    (
                        s.name.to_string(),
                        format!("{}{ordering}", s.provider.kind()),
                    )
                })
                .collect(),
            demo: config.file.is_none(),
            warnings: config.warnings.clone(),
        }
    }
}

/// An address to reach a listener on: the loopback for one that listens
/// everywhere.
fn shown_host(ip: IpAddr) -> String {
    match ip {
        ip if ip.is_unspecified() => "127.0.0.1".to_owned(),
        IpAddr::V6(v6) => format!("[{v6}]"),
        IpAddr::V4(v4) => v4.to_string(),
    }
}

impl Banner {
    /// The lines, for the address actually listened on and the database
    /// opened.
    pub fn lines(&self, listening: Listening, database: &str) -> Vec<String> {
        let port = listening.address.port();
        let host = if listening.inherited {
            shown_host(listening.address.ip())
        } else {
            self.host.clone()
        };
        let base = format!("http://{host}:{port}");
        let row = |label: &str, value: &str| format!("  {label:<LABEL$} {value}");
        let mut lines = vec![format!("hookledger listening on {base}")];
        if listening.inherited {
            lines.push(row(
                "socket",
                "passed by systemd (socket activation); `listen` is not used",
            ));
        }
        lines.extend([
            row("admin page", &format!("{base}/admin")),
            row("database", database),
            row(
                "config",
                self.file
                    .as_deref()
                    .unwrap_or("none (no hookledger.toml): the demo sources below are on"),
            ),
        ]);
        for (what, secret, file) in &self.managed {
            lines.push(row(what, &format!("{secret}  (kept in {file})")));
        }
        for (name, kind) in &self.sources {
            lines.push(row(
                &format!("source {name}"),
                &format!("POST {base}/webhooks/{name} ({kind})"),
            ));
        }
        for warning in &self.warnings {
            lines.push(row("warning", warning));
        }
        if self.demo {
            let url = if self.listen_port == Some(port) {
                String::new()
            } else {
                format!(" --url {base}/webhooks/demo")
            };
            lines.push(row(
                "try it",
                &format!("{} send --source demo --sequence 1{url}", invocation()),
            ));
            lines.push(row(
                "note",
                "no config file, so the demo sources are on; `hookledger init --kind stripe` \
                 writes a hookledger.toml for a real provider",
            ));
        }
        lines
    }
}

/// The command as it was invoked: `cargo run --release --` under cargo
/// (which sets `CARGO` for what it runs), else the program as typed.
pub fn invocation() -> String {
    let program = std::env::args()
        .next()
        .unwrap_or_else(|| "hookledger".into());
    let in_target = program.contains("/target/") || program.starts_with("target/");
    if std::env::var_os("CARGO").is_some() && in_target {
        if program.contains("/release/") {
            "cargo run --release --".to_owned()
        } else {
            "cargo run --".to_owned()
        }
    } else {
        program
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(port: u16) -> Listening {
        Listening {
            address: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
            inherited: false,
        }
    }

    fn banner(file: Option<&str>) -> Banner {
        Banner {
            host: "127.0.0.1".into(),
            listen_port: Some(8080),
            file: file.map(str::to_owned),
            managed: vec![(
                "admin token".into(),
                "tok".into(),
                "data/admin_token".into(),
            )],
            sources: vec![("stripe".into(), "stripe".into())],
            demo: file.is_none(),
            warnings: vec!["sources[stripe].secrets[0] looks like a placeholder".into()],
        }
    }

    #[test]
    fn a_config_file_run_lists_its_file_sources_and_database() {
        let lines =
            banner(Some("hookledger.toml")).lines(bound(8080), "PostgreSQL at db:5432/hl as app");
        assert_eq!(
            lines,
            [
                "hookledger listening on http://127.0.0.1:8080",
                "  admin page           http://127.0.0.1:8080/admin",
                "  database             PostgreSQL at db:5432/hl as app",
                "  config               hookledger.toml",
                "  admin token          tok  (kept in data/admin_token)",
                "  source stripe        POST http://127.0.0.1:8080/webhooks/stripe (stripe)",
                "  warning              sources[stripe].secrets[0] looks like a placeholder",
            ]
        );
    }

    #[test]
    fn the_demo_says_how_to_try_it_on_the_port_bound() {
        let lines = banner(None).lines(bound(8080), "SQLite at data/hookledger.db");
        let try_it = lines.iter().find(|l| l.contains("try it")).unwrap();
        assert!(
            try_it.ends_with(" send --source demo --sequence 1"),
            "{try_it}"
        );
        let other_port = banner(None).lines(bound(4000), "SQLite");
        let try_it = other_port.iter().find(|l| l.contains("try it")).unwrap();
        assert!(
            try_it.ends_with(
                " send --source demo --sequence 1 --url http://127.0.0.1:4000/webhooks/demo"
            ),
            "{try_it}"
        );
    }

    #[test]
    fn a_socket_systemd_passed_is_named_with_its_own_address() {
        let passed = |address: std::net::SocketAddr| Listening {
            address,
            inherited: true,
        };
        let lines = banner(Some("hookledger.toml")).lines(
            passed(std::net::SocketAddr::from(([0, 0, 0, 0], 9000))),
            "SQLite",
        );
        assert_eq!(lines[0], "hookledger listening on http://127.0.0.1:9000");
        assert_eq!(
            lines[1],
            "  socket               passed by systemd (socket activation); `listen` is not used"
        );
        let v6 =
            banner(Some("hookledger.toml")).lines(passed("[::1]:9001".parse().unwrap()), "SQLite");
        assert_eq!(v6[0], "hookledger listening on http://[::1]:9001");
    }
}
