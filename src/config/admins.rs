//! `[[admin.tokens]]`: more admin tokens beside `admin.token`, each with a
//! name (what the audit log records) and optionally read-only (pages and
//! API, never apply, dismiss, skip, reset or replay).

use super::error::Problems;
use super::raw::RawAdminToken;
use super::secrets::resolve_token;
use super::{ConfigError, Env};
use crate::secret::Secret;

/// The name `admin.token` goes by in the audit log.
pub const MAIN_ADMIN: &str = "admin";

/// One admin token and who holds it.
#[derive(Debug, Clone)]
pub struct AdminToken {
    pub name: String,
    pub token: Secret,
    pub read_only: bool,
}

/// Checks each named token: a plain name, unique and not `admin`, a
/// token of 16 characters or more that no other admin token shares.
pub fn build_admin_tokens(
    raw: Vec<RawAdminToken>,
    main: Option<&Secret>,
    env: Env<'_>,
    problems: &mut Problems,
) -> Vec<AdminToken> {
    let mut tokens: Vec<AdminToken> = Vec::new();
    for (i, raw) in raw.into_iter().enumerate() {
        let key = format!("admin.tokens[{i}]");
        let plain = !raw.name.is_empty()
            && raw.name.len() <= 64
            && raw
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !plain {
            problems.push(ConfigError::new(
                format!("{key}.name"),
                "must be 1-64 letters, digits, '-' or '_'",
            ));
            continue;
        }
        if raw.name == MAIN_ADMIN || tokens.iter().any(|t| t.name == raw.name) {
            problems.push(ConfigError::new(
                format!("{key}.name"),
                format!("{} is taken (`admin` names admin.token)", raw.name),
            ));
            continue;
        }
        let Some(token) = problems.take(resolve_token(&raw.token, env, &format!("{key}.token")))
        else {
            continue;
        };
        let shared = main.is_some_and(|m| m.expose() == token.expose())
            || tokens.iter().any(|t| t.token.expose() == token.expose());
        if shared {
            problems.push(ConfigError::new(
                format!("{key}.token"),
                "is another admin token's: each holder needs their own",
            ));
            continue;
        }
        tokens.push(AdminToken {
            name: raw.name,
            token,
            read_only: raw.read_only,
        });
    }
    tokens
}
