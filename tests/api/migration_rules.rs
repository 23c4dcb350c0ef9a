//! The rules migrations follow from 0017 on (expand/contract, so that two
//! releases serve one database: docs/production/upgrades.md):
//! - every PostgreSQL migration passes squawk, the PostgreSQL migration
//!   linter, with `tests/tools/squawk.toml` (its default rules, which guard
//!   a live table; 0001-0016 excluded by name);
//! - every migration, on both backends, writes its own
//!   `schema_compatibility` row naming the oldest migration a binary must
//!   know to run against it, the same on both.

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The migrations of `folder` from 0017 on, by file name, with their text.
fn ruled(folder: &str) -> Vec<(String, String)> {
    let dir = root().join("migrations").join(folder);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    files
        .into_iter()
        .filter_map(|path| {
            let name = path.file_name()?.to_string_lossy().into_owned();
            let version: u32 = name.split('_').next()?.parse().ok()?;
            (version >= 17).then(|| (name, std::fs::read_to_string(&path).unwrap()))
        })
        .collect()
}

/// The `(version, readable_from)` a migration's text writes.
fn compatibility(text: &str) -> Option<(i64, i64)> {
    let at = text.find("insert into schema_compatibility")?;
    let values = &text[at..];
    let values = &values[values.find("values (")? + "values (".len()..];
    let mut parts = values.split(',');
    let version = parts.next()?.trim().parse().ok()?;
    let readable_from = parts.next()?.trim().parse().ok()?;
    Some((version, readable_from))
}

#[test]
fn every_migration_from_0017_says_which_binaries_may_read_it() {
    let (postgres, sqlite) = (ruled("postgres"), ruled("sqlite"));
    assert!(!postgres.is_empty());
    assert_eq!(postgres.len(), sqlite.len());
    for ((name, pg), (_, lite)) in postgres.iter().zip(&sqlite) {
        let version: i64 = name.split('_').next().unwrap().parse().unwrap();
        let said = compatibility(pg).unwrap_or_else(|| panic!("{name} writes no row"));
        assert_eq!(said.0, version, "{name} writes its own version");
        assert!(said.1 <= version, "{name}: readable_from after itself");
        assert_eq!(
            compatibility(lite),
            Some(said),
            "sqlite/{name} says the same"
        );
    }
    assert_eq!(
        compatibility("insert into schema_compatibility (a, b) values (18, 17, 'x')"),
        Some((18, 17))
    );
}

#[test]
fn the_postgres_migrations_pass_squawk() {
    let squawk = match std::env::var("HOOKLEDGER_TEST_SQUAWK") {
        Ok(path) => path,
        Err(_) if std::env::var_os("CI").is_some() => {
            panic!("CI is set but HOOKLEDGER_TEST_SQUAWK is not: the migrations cannot be linted")
        }
        Err(_) => {
            eprintln!(
                "SKIPPED the_postgres_migrations_pass_squawk: HOOKLEDGER_TEST_SQUAWK is not set"
            );
            return;
        }
    };
    let mut files: Vec<String> = std::fs::read_dir(root().join("migrations/postgres"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".sql"))
        .map(|name| format!("migrations/postgres/{name}"))
        .collect();
    files.sort();
    let run = |files: &[String]| {
        std::process::Command::new(&squawk)
            .current_dir(root())
            .args(["--config", "tests/tools/squawk.toml", "--reporter", "gcc"])
            .args(files)
            .output()
            .expect("squawk runs")
    };
    let linted = run(&files);
    let said = String::from_utf8_lossy(&linted.stdout);
    assert!(linted.status.success() && said.trim().is_empty(), "{said}");
    // The check can fail: a migration that drops a column, with no lock
    // timeout, does.
    let dir = root().join("target/squawk-probe");
    std::fs::create_dir_all(&dir).unwrap();
    let probe = dir.join("0099_probe.sql");
    std::fs::write(&probe, "alter table intents drop column reason;\n").unwrap();
    let refused = run(&["target/squawk-probe/0099_probe.sql".to_owned()]);
    let said = String::from_utf8_lossy(&refused.stdout);
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains("ban-drop-column"), "{said}");
}
