//! What a command can fail with: one line on stderr, a non-zero exit.

use crate::config::ConfigError;
use crate::startup::StartupError;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Startup(#[from] StartupError),
    #[error("server stopped with an error: {0}")]
    Serve(std::io::Error),
    #[error("{0}")]
    Send(String),
    #[error("{0}")]
    Init(String),
    #[error("{0} invariant violation(s); see the JSON on stdout")]
    Violations(usize),
    #[error("{0}")]
    Check(crate::store::StoreError),
    #[error("{0} chain(s) broken; see the JSON on stdout")]
    Broken(usize),
    #[error("reconcile: {0}")]
    Reconcile(String),
    /// `migrate --check`: migrations to apply.
    #[error("{0} migration(s) to apply")]
    SchemaBehind(usize),
    /// `migrate --check`: a newer schema this binary cannot serve.
    #[error("the database's schema is newer than this binary and not compatible")]
    SchemaAhead,
}

impl CliError {
    /// The process's exit code: 2 for a schema behind this binary (what
    /// `migrate --check` tells a deploy script), 1 for everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::SchemaBehind(_) => 2,
            _ => 1,
        }
    }
}

impl From<ConfigError> for CliError {
    fn from(error: ConfigError) -> Self {
        CliError::Startup(error.into())
    }
}
