//! The fuzz properties over the seed corpus `fuzz/seed.sh` writes (the test
//! fixtures, the example config, a few amounts and paths), and over seeded
//! mutations of it, as libFuzzer's first mutations would be. A failure
//! names the input, as hex, and the seed that made it.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use crate::rng::SplitMix64;

/// Mutated variants per seed input.
const VARIANTS: usize = 400;

/// `HOOKLEDGER_FUZZ_SEED` replays another run's mutations.
fn seed() -> u64 {
    std::env::var("HOOKLEDGER_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every provider fixture, as `fuzz/seed.sh` copies them.
fn fixtures() -> Vec<Vec<u8>> {
    let mut bodies = Vec::new();
    let kinds = std::fs::read_dir(root().join("tests/fixtures")).expect("tests/fixtures exists");
    for kind in kinds {
        let kind = kind.expect("a readable folder entry").path();
        for file in std::fs::read_dir(&kind).expect("a readable fixture folder") {
            let path = file.expect("a readable folder entry").path();
            if path.extension().is_some_and(|e| e == "json") {
                bodies.push(std::fs::read(&path).expect("a readable fixture"));
            }
        }
    }
    assert!(bodies.len() >= 20, "found {} fixtures", bodies.len());
    bodies
}

/// One of libFuzzer's simple mutations of `input`, with `others` to splice
/// from.
fn mutate(rng: &mut SplitMix64, input: &[u8], others: &[Vec<u8>]) -> Vec<u8> {
    const BYTES: &[u8] = b"\0\xff\"{}[]:,.-0123456789\n\\ e";
    let mut out = input.to_vec();
    for _ in 0..=rng.below(3) {
        let at = rng.index(out.len() + 1);
        match rng.below(6) {
            0 if !out.is_empty() => {
                let i = rng.index(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let i = rng.index(out.len());
                out[i] = *rng.pick(BYTES);
            }
            2 => out.insert(at, *rng.pick(BYTES)),
            3 => {
                let end = (at + 1 + rng.index(16)).min(out.len());
                out.drain(at.min(end)..end);
            }
            4 => {
                let from = rng.index(out.len() + 1);
                let len = rng.index(out.len() - from + 1).min(64);
                let chunk = out[from..from + len].to_vec();
                out.splice(at..at, chunk);
            }
            _ => {
                let other = rng.pick(others);
                let from = rng.index(other.len() + 1);
                let len = rng.index(other.len() - from + 1).min(64);
                out.splice(at..at, other[from..from + len].iter().copied());
            }
        }
    }
    out
}

/// Runs `property` on every seed and [`VARIANTS`] mutations of each.
fn check(name: &str, property: fn(&[u8]), seeds: &[Vec<u8>]) {
    let seed = seed();
    let mut rng = SplitMix64::new(seed);
    let mut runs = 0;
    for input in seeds {
        let variants = (0..VARIANTS).map(|_| mutate(&mut rng, input, seeds));
        for data in std::iter::once(input.clone()).chain(variants) {
            if catch_unwind(AssertUnwindSafe(|| property(&data))).is_err() {
                panic!(
                    "{name} failed on {} (HOOKLEDGER_FUZZ_SEED={seed})",
                    hex::encode(&data)
                );
            }
            runs += 1;
        }
    }
    assert_eq!(runs, seeds.len() * (VARIANTS + 1));
}

fn texts(items: &[&str]) -> Vec<Vec<u8>> {
    items.iter().map(|s| s.as_bytes().to_vec()).collect()
}

#[test]
fn verify_holds_on_seeds_and_mutations() {
    let head = "stripe-signature: t=1780000000,v1=abc\nwebhook-id: msg_1\n\
                webhook-timestamp: 1780000000\nwebhook-signature: v1,abc\n\n";
    let seeds: Vec<Vec<u8>> = fixtures()
        .into_iter()
        .map(|body| [head.as_bytes(), &body].concat())
        .collect();
    check("verify", super::verify, &seeds);
}

#[test]
fn normalise_holds_on_seeds_and_mutations() {
    check("normalise", super::normalise, &fixtures());
}

#[test]
fn money_holds_on_seeds_and_mutations() {
    let seeds = texts(&["USD 12.34", "JPY 1500", "BHD 1.005", "EUR 0.5", "USD 1e3"]);
    check("money", super::money, &seeds);
}

#[test]
fn config_holds_on_seeds_and_mutations() {
    let example = std::fs::read(root().join("hookledger.example.toml")).expect("the example");
    check("config", super::config, &[example]);
}

#[test]
fn json_path_holds_on_seeds_and_mutations() {
    let seeds = texts(&[
        "data.object.metadata.account_id",
        "note_attributes.[name=account_id].value",
        "data.object.items.1.a",
    ]);
    check("json_path", super::json_path, &seeds);
}

#[test]
fn a_broken_property_is_reported_with_its_input() {
    fn fails_on_x(data: &[u8]) {
        assert!(!data.contains(&b'x'));
    }
    let caught = catch_unwind(|| check("x", fails_on_x, &texts(&["abc", "x"])));
    let message = caught.expect_err("the seed 'x' breaks the property");
    let text = message
        .downcast_ref::<String>()
        .expect("a formatted message");
    assert!(text.contains(&hex::encode("x")), "{text}");
}
