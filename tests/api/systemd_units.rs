//! The systemd units in `deploy/systemd/`: `systemd-analyze verify` takes
//! them without a word (its warnings, an unknown key say, fail the test),
//! the service starts `serve` on the socket's address, and its stop
//! timeout is longer than the longest stop its settings allow, or
//! systemd's SIGKILL would cut answers off.

use std::path::Path;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_hookledger");

fn unit(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/systemd")
        .join(name);
    std::fs::read_to_string(path).expect("the unit is in deploy/systemd")
}

/// The values of `key=` lines, in order.
fn values<'a>(text: &'a str, key: &str) -> Vec<&'a str> {
    text.lines()
        .filter_map(|line| line.strip_prefix(key)?.strip_prefix('='))
        .collect()
}

fn environment(service: &str, name: &str) -> u64 {
    values(service, "Environment")
        .iter()
        .find_map(|v| v.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("{name} is set"))
        .parse()
        .unwrap()
}

#[test]
fn the_units_verify_and_the_stop_timeout_covers_the_longest_stop() {
    let (service, socket) = (unit("hookledger.service"), unit("hookledger.socket"));
    let exec = values(&service, "ExecStart");
    assert_eq!(exec.len(), 1);
    let (binary, args) = exec[0].split_once(' ').unwrap();
    assert!(args.ends_with(" serve"), "{args}");
    assert_eq!(values(&socket, "ListenStream"), ["127.0.0.1:8080"]);
    assert!(values(&service, "Requires").contains(&"hookledger.socket"));

    let drain = Duration::from_secs(environment(&service, "HOOKLEDGER_DRAIN_SECS"));
    let shutdown = Duration::from_secs(environment(&service, "HOOKLEDGER_SHUTDOWN_TIMEOUT_SECS"));
    let longest = hookledger::startup::longest_stop(drain, shutdown);
    let timeout: u64 = values(&service, "TimeoutStopSec")[0].parse().unwrap();
    assert!(
        Duration::from_secs(timeout) > longest,
        "TimeoutStopSec={timeout} is not longer than the longest stop, {longest:?}"
    );

    // verify checks that ExecStart's binary exists: this build's, here.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("hookledger.service"),
        service.replace(binary, BIN),
    )
    .unwrap();
    std::fs::write(dir.path().join("hookledger.socket"), &socket).unwrap();
    let verified = match std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(dir.path().join("hookledger.service"))
        .arg(dir.path().join("hookledger.socket"))
        .output()
    {
        Ok(output) => output,
        Err(_) if std::env::var_os("CI").is_none() => {
            eprintln!("SKIPPED systemd-analyze verify: systemd-analyze is not installed");
            return;
        }
        Err(e) => panic!("CI is set but systemd-analyze cannot run: {e}"),
    };
    let said = String::from_utf8_lossy(&verified.stderr);
    assert!(
        verified.status.success() && said.trim().is_empty(),
        "{said}"
    );
}
