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
    #[error("reconcile: {0}")]
    Reconcile(String),
}

impl From<ConfigError> for CliError {
    fn from(error: ConfigError) -> Self {
        CliError::Startup(error.into())
    }
}
