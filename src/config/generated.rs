//! Secrets hookledger generates for itself on first start (the admin token and
//! the demo source's secret), kept in the data directory with mode 0600 so they
//! survive restarts.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::secret::Secret;

/// How a generated secret is encoded.
#[derive(Debug, Clone, Copy)]
pub enum Flavor {
    /// 32 random bytes as hex: an admin token.
    Token,
    /// `whsec_` + base64 of 24 random bytes: a Standard Webhooks secret.
    WebhookSecret,
}

/// Reads `dir/file_name`, or creates it with a fresh random secret.
pub fn load_or_create(dir: &Path, file_name: &str, flavor: Flavor) -> io::Result<Secret> {
    let path = dir.join(file_name);
    match fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => return Ok(Secret::new(text.trim())),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    fs::create_dir_all(dir)?;
    let secret = match flavor {
        Flavor::Token => hex::encode(random_bytes::<32>()?),
        Flavor::WebhookSecret => format!("whsec_{}", STANDARD.encode(random_bytes::<24>()?)),
    };
    write_private(&path, &secret)?;
    Ok(Secret::new(secret))
}

pub fn random_bytes<const N: usize>() -> io::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(io::Error::other)?;
    Ok(bytes)
}

fn write_private(path: &Path, contents: &str) -> io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(contents.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_once_then_reads_back_with_private_mode() {
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_create(dir.path(), "admin_token", Flavor::Token).unwrap();
        assert_eq!(first.expose().len(), 64);
        let on_disk = fs::read_to_string(dir.path().join("admin_token")).unwrap();
        assert_eq!(on_disk.trim(), first.expose());
        let again = load_or_create(dir.path(), "admin_token", Flavor::Token).unwrap();
        assert_eq!(first, again);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(dir.path().join("admin_token"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let secret = load_or_create(dir.path(), "demo_secret", Flavor::WebhookSecret).unwrap();
        assert!(secret.expose().starts_with("whsec_"));
    }
}
