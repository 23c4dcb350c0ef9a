//! The architecture, checked on the source (`../shared/STYLE.md`, "Layout"):
//! the import graph of `src/` has no circle, no import runs from a lower
//! layer to a higher one, the crates each layer must not touch stay out of
//! it, and SQL text lives only in the store. A failure names the files and
//! the names they take.

mod graph;
mod source;

use std::path::Path;

use graph::Graph;
use source::{File, identifiers, read_tree};

/// The layers, top to bottom, by top-level module: a file imports only
/// from its own layer or below. `lib.rs` is plain.
const LAYERS: &[(&str, &[&str])] = &[
    ("entry", &["cli", "fuzzing"]),
    ("wiring", &["startup", "server", "app", "background"]),
    ("admin", &["admin"]),
    ("http", &["http"]),
    ("app state", &["context"]),
    ("operator", &["operator", "replay", "reconcile"]),
    (
        "use case",
        &[
            "receive",
            "ingest",
            "ledger_check",
            "failures",
            "session",
            "provider_api",
            "thin",
        ],
    ),
    ("outbox", &["outbox"]),
    ("config", &["config"]),
    ("providers", &["providers", "source"]),
    ("store", &["store"]),
    ("telemetry", &["telemetry"]),
    (
        "plain",
        &[
            "domain",
            "net",
            "secret",
            "clock",
            "rng",
            "tls",
            "lifecycle",
            "lib",
        ],
    ),
];

/// Crates a layer never touches: the web layer no SQL or MAC crate, the
/// providers no web framework, database or runtime.
const KEPT_OUT: &[(&str, &[&str])] = &[
    ("http", &["sqlx", "hmac", "sha2"]),
    ("admin", &["sqlx", "hmac", "sha2"]),
    (
        "providers",
        &["actix_web", "actix_http", "actix_server", "sqlx", "tokio"],
    ),
];

fn tree() -> Vec<File> {
    read_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The top-level module a node is in (`lib` for `lib.rs`).
fn top(node: &str) -> &str {
    let file = node.split("::").next().unwrap_or(node);
    let first = file.split('/').next().unwrap_or(file);
    first.trim_end_matches(".rs")
}

/// Higher is further up.
fn layer(node: &str) -> Option<usize> {
    let top = top(node);
    LAYERS
        .iter()
        .position(|(_, modules)| modules.contains(&top))
        .map(|i| LAYERS.len() - i)
}

fn names(names: &std::collections::BTreeSet<String>) -> String {
    names.iter().cloned().collect::<Vec<_>>().join(", ")
}

#[test]
fn the_import_graph_has_no_circle() {
    let graph = Graph::of(&tree());
    let circles: Vec<String> = graph
        .circles()
        .into_iter()
        .map(|circle| {
            let mut lines = vec![format!(
                "a circle of {}: {}",
                circle.len(),
                circle.join(" ")
            )];
            for from in &circle {
                for (to, taken) in &graph.edges[from] {
                    if circle.contains(to) {
                        lines.push(format!("  {from} -> {to} ({})", names(taken)));
                    }
                }
            }
            lines.join("\n")
        })
        .collect();
    assert!(circles.is_empty(), "{}", circles.join("\n"));
}

#[test]
fn no_import_runs_from_a_lower_layer_to_a_higher_one() {
    let graph = Graph::of(&tree());
    let mut problems = Vec::new();
    for (from, imports) in &graph.edges {
        let Some(from_layer) = layer(from) else {
            problems.push(format!(
                "{from}: its module is in no layer (add it to LAYERS)"
            ));
            continue;
        };
        for (to, taken) in imports {
            if layer(to).is_some_and(|to_layer| to_layer > from_layer) {
                problems.push(format!("{from} -> {to} ({}) runs up", names(taken)));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn each_layer_keeps_off_the_crates_it_must_not_touch() {
    let mut problems = Vec::new();
    for file in tree() {
        let Some((_, crates)) = KEPT_OUT
            .iter()
            .find(|(top_module, _)| file.module.first().map(String::as_str) == Some(*top_module))
        else {
            continue;
        };
        // A crate is named at the start of a path: `sqlx::query`, `use sha2`.
        for (at, word) in identifiers(&file.code) {
            let path_start = !file.code[..at].ends_with("::");
            let names_a_path = file.code[at + word.len()..].starts_with("::")
                || file.code[..at].trim_end().ends_with("use");
            if crates.contains(&word) && path_start && names_a_path {
                problems.push(format!("{} uses {word}", file.path));
            }
        }
    }
    problems.dedup();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn sql_text_lives_only_in_the_store() {
    let looks_like_sql = |text: &str| {
        let text = text.trim_start().to_ascii_lowercase();
        (text.starts_with("select ") && text.contains(" from "))
            || text.starts_with("insert into ")
            || text.starts_with("delete from ")
            || (text.starts_with("update ") && text.contains(" set "))
    };
    let problems: Vec<String> = tree()
        .into_iter()
        .filter(|file| file.module.first().map(String::as_str) != Some("store"))
        .flat_map(|file| {
            file.literals
                .iter()
                .filter(|text| looks_like_sql(text))
                .map(|text| format!("{}: {:?}", file.path, text.lines().next().unwrap_or("")))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
