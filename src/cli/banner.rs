//! What the person who started hookledger needs to see: where it listens,
//! the admin URL, the database it opened (as the store describes it, never
//! guessed from the URL), the config file, every source's endpoint, and
//! for self-managed secrets only, the values to use.

use crate::config::Config;

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

impl Banner {
    /// The lines, for the port actually bound and the database opened.
    pub fn lines(&self, port: u16, database: &str) -> Vec<String> {
        let base = format!("http://{}:{port}", self.host);
        let row = |label: &str, value: &str| format!("  {label:<LABEL$} {value}");
        let mut lines = vec![
            format!("hookledger listening on {base}"),
            row("admin page", &format!("{base}/admin")),
            row("database", database),
            row(
                "config",
                self.file
                    .as_deref()
                    .unwrap_or("none (no hookledger.toml): the demo sources below are on"),
            ),
        ];
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
        let lines = banner(Some("hookledger.toml")).lines(8080, "PostgreSQL at db:5432/hl as app");
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
        let lines = banner(None).lines(8080, "SQLite at data/hookledger.db");
        let try_it = lines.iter().find(|l| l.contains("try it")).unwrap();
        assert!(
            try_it.ends_with(" send --source demo --sequence 1"),
            "{try_it}"
        );
        let other_port = banner(None).lines(4000, "SQLite");
        let try_it = other_port.iter().find(|l| l.contains("try it")).unwrap();
        assert!(
            try_it.ends_with(
                " send --source demo --sequence 1 --url http://127.0.0.1:4000/webhooks/demo"
            ),
            "{try_it}"
        );
    }
}
