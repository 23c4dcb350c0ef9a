//! Rebuild the crate when a migration is added or edited.
//!
//! `sqlx::migrate!` reads `migrations/` while the crate compiles, and Cargo
//! recompiles a crate only when a file it tracks changes. A new migration
//! file is not one of them: without this script `cargo build` and
//! `cargo test` keep the list of the last build, and a test of the new
//! migration runs against the old schema (sqlx's documentation of
//! `migrate!` says the same and recommends this script).
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
