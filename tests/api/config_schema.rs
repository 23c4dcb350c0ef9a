//! The config file's JSON Schema (`schema/hookledger.schema.json`): the
//! committed file is the one the binary generates, and taplo (PyPI, the
//! TOML toolkit editors build on; `HOOKLEDGER_TEST_TAPLO`, from the venv
//! `.ci/run` creates) accepts every config hookledger itself writes and the
//! example, and refuses what `check-config` refuses.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::helpers::named_by_env;
use crate::process::hookledger;

fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

#[test]
fn the_committed_schema_is_the_generated_one() {
    let committed = std::fs::read_to_string(repo_file("schema/hookledger.schema.json"))
        .expect("schema/hookledger.schema.json is committed");
    let dir = tempfile::tempdir().unwrap();
    let output = hookledger(dir.path())
        .arg("config-schema")
        .output()
        .unwrap();
    assert!(output.status.success());
    let generated = String::from_utf8(output.stdout).unwrap();
    assert!(
        committed == generated,
        "schema/hookledger.schema.json is not what the config types generate: run \
         `cargo run -- config-schema > schema/hookledger.schema.json` and commit it"
    );
    let schema: serde_json::Value = serde_json::from_str(&generated).unwrap();
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
}

/// taplo, or `None` (said) where the venv is not set up; under CI its
/// absence fails the test.
fn taplo(test: &str) -> Option<String> {
    named_by_env("HOOKLEDGER_TEST_TAPLO", test)
}

/// Whether taplo finds `file` valid, against its `#:schema` line or, when
/// given, `schema`; and what it said.
fn taplo_accepts(taplo: &str, file: &Path, schema: Option<&Path>) -> (bool, String) {
    let mut command = Command::new(taplo);
    command.args(["lint", "--no-auto-config", "--colors", "never"]);
    if let Some(schema) = schema {
        command
            .arg("--schema")
            .arg(format!("file://{}", schema.display()));
    }
    let output = command.arg(file).output().expect("taplo runs");
    let said = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.success(), said)
}

#[test]
fn every_config_hookledger_writes_and_the_example_are_valid() {
    let Some(taplo) = taplo("every_config_hookledger_writes_and_the_example_are_valid") else {
        return;
    };
    let schema = repo_file("schema/hookledger.schema.json");
    let example = repo_file("hookledger.example.toml");
    let (valid, said) = taplo_accepts(&taplo, &example, Some(&schema));
    assert!(valid, "hookledger.example.toml: {said}");
    let scratch = tempfile::tempdir().unwrap();
    let listed = hookledger(scratch.path())
        .args(["init", "--kind", "no-such-kind"])
        .output()
        .unwrap();
    let refusal = String::from_utf8_lossy(&listed.stderr);
    let known = refusal
        .split("known: ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("init lists the known kinds: {refusal}"));
    assert!(known.split(", ").count() >= 14, "{known}");
    for kind in known.split(", ") {
        let dir = tempfile::tempdir().unwrap();
        let output = hookledger(dir.path())
            .args([
                "init",
                "--kind",
                kind,
                "--public-url",
                "https://hooks.example.com",
            ])
            .output()
            .unwrap();
        assert!(output.status.success(), "init --kind {kind}: {output:?}");
        let config = dir.path().join("hookledger.toml");
        let text = std::fs::read_to_string(&config).unwrap();
        assert!(
            text.starts_with("#:schema ./hookledger.schema.json\n"),
            "{text}"
        );
        // Against the schema init wrote beside it, as an editor would read it.
        let (valid, said) = taplo_accepts(&taplo, &config, None);
        assert!(valid, "init --kind {kind}: {said}\n{text}");
    }
}

/// Files check-config refuses, one mistake each, and the key taplo names.
const BROKEN: &[(&str, &str, &str)] = &[
    ("an unknown top-level key", "lisen = \"127.0.0.1:9\"\n", ""),
    ("a number as a string", "max_body_bytes = \"big\"\n", ""),
    ("a number out of range", "max_body_bytes = 0\n", ""),
    (
        "an unknown table key",
        "[database]\nmax_conections = 3\n",
        "",
    ),
    ("an unknown kind", "", "kind = \"bitcoin-by-fax\""),
    (
        "an unknown source key",
        "",
        "kind = \"stripe\"\nsecret = \"s\"",
    ),
    (
        "a list as a string",
        "",
        "kind = \"stripe\"\nsecrets = \"whsec_x\"",
    ),
    (
        "an unknown ordering",
        "",
        "kind = \"stripe\"\nordering = \"random\"",
    ),
    (
        "another kind's key",
        "",
        "kind = \"stripe\"\nnotification_url = \"https://h.example/w\"",
    ),
    (
        "an unknown destination kind",
        "[[destinations]]\nname = \"d\"\nkind = \"pigeon\"\n",
        "",
    ),
    (
        "an unknown destination key",
        "[[destinations]]\nname = \"d\"\nkind = \"http\"\nurl = \"https://h.example/in\"\n\
         secret = \"whsec_YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4\"\nsubject = \"x\"\n",
        "",
    ),
];

fn config(top: &str, source: &str) -> String {
    let source = if source.is_empty() {
        "kind = \"stripe\"".to_owned()
    } else {
        source.to_owned()
    };
    let secrets = if source.contains("secrets") {
        ""
    } else {
        "secrets = [\"whsec_YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4\"]\n"
    };
    // Top-level keys before any table.
    let (plain, tables) = match top.find('[') {
        Some(at) => top.split_at(at),
        None => (top, ""),
    };
    format!(
        "{plain}data_dir = \"data\"\n[admin]\ntoken = \"admin-token-0123456789\"\n\
         [[sources]]\nname = \"s\"\n{source}\n{secrets}{tables}"
    )
}

#[test]
fn the_schema_refuses_what_check_config_refuses() {
    let Some(taplo) = taplo("the_schema_refuses_what_check_config_refuses") else {
        return;
    };
    let schema = repo_file("schema/hookledger.schema.json");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hookledger.toml");
    let check = |text: &str| {
        std::fs::write(&file, text).unwrap();
        let output = hookledger(dir.path())
            .arg("--config")
            .arg(&file)
            .arg("check-config")
            .output()
            .unwrap();
        let (valid, said) = taplo_accepts(&taplo, &file, Some(&schema));
        (output.status.success(), valid, said)
    };
    // The base file is fine for both: each broken one differs by its mistake.
    let (checks, valid, said) = check(&config("", ""));
    assert!(checks && valid, "the base config: {said}");
    for (mistake, top, source) in BROKEN {
        let text = config(top, source);
        let (checks, valid, said) = check(&text);
        assert!(!checks, "check-config accepts {mistake}:\n{text}");
        assert!(!valid, "the schema accepts {mistake}:\n{text}\n{said}");
    }
}
