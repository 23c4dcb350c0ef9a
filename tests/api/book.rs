//! The book (`docs/`, an mdBook): its reference pages are renderings of
//! what the code publishes (the config's JSON Schema, the OpenAPI
//! contract, the binary's own help), so a config key, an HTTP route or a
//! command that exists in the code and not in the book fails here. Each
//! page holds its rendering between two markers; `HOOKLEDGER_BLESS=1 cargo
//! test book::` writes it after a change.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use serde_json::Value;

use crate::doc_links::{files_under, link_target};

const BEGIN: &str = "<!-- generated:begin -->\n";
const END: &str = "<!-- generated:end -->";

fn docs(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join(path)
}

/// Fails unless `page` holds `rendered` between the markers; writes it
/// there with `HOOKLEDGER_BLESS` set.
fn holds(page: &str, rendered: &str) {
    let path = docs(page);
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text.find(BEGIN).expect("the page has the markers") + BEGIN.len();
    let stop = text.find(END).expect("the page has the end marker");
    if text[start..stop] == *rendered {
        return;
    }
    if std::env::var_os("HOOKLEDGER_BLESS").is_some() {
        std::fs::write(
            &path,
            format!("{}{rendered}{}", &text[..start], &text[stop..]),
        )
        .unwrap();
        return;
    }
    panic!(
        "docs/{page} is not the rendering of what the code publishes: \
         HOOKLEDGER_BLESS=1 cargo test book:: writes it"
    );
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// A property's type, as a person reads it.
fn type_of(schema: &Value) -> String {
    if let Some(value) = schema.get("const") {
        return format!("`{value}`");
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let values: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
        return format!("one of {}", values.join(", "));
    }
    for combinator in ["oneOf", "anyOf"] {
        if let Some(options) = schema.get(combinator).and_then(Value::as_array) {
            let options: Vec<String> = options.iter().map(type_of).collect();
            return options.join(" or ");
        }
    }
    let range = match (schema.get("minimum"), schema.get("maximum")) {
        (Some(min), Some(max)) => format!(" ({min}-{max})"),
        (Some(min), None) if min != 0 => format!(" (at least {min})"),
        (None, Some(max)) => format!(" (at most {max})"),
        _ => String::new(),
    };
    match schema.get("type") {
        Some(Value::String(kind)) if kind == "array" => {
            format!("array of {}", type_of(&schema["items"]))
        }
        Some(Value::String(kind)) => format!("{kind}{range}"),
        Some(Value::Array(kinds)) => {
            let kinds: Vec<&str> = kinds.iter().filter_map(Value::as_str).collect();
            format!("{}{range}", kinds.join(" or "))
        }
        _ => "any".to_owned(),
    }
}

/// One table's keys, then each nested table and array of tables.
fn config_table(out: &mut String, title: &str, schema: &Value) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    writeln!(out, "### {title}\n").unwrap();
    if let Some(description) = schema.get("description").and_then(Value::as_str) {
        writeln!(out, "{description}\n").unwrap();
    }
    out.push_str("| key | type | default | what it is |\n|---|---|---|---|\n");
    let mut nested = Vec::new();
    for (key, property) in properties {
        let is_table = property.get("properties").is_some();
        let is_array_of_tables = property["items"].get("properties").is_some();
        let default = property
            .get("default")
            .map(|d| format!("`{d}`"))
            .unwrap_or_default();
        let description = property
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = if is_table {
            "table".to_owned()
        } else if is_array_of_tables {
            "array of tables".to_owned()
        } else {
            type_of(property)
        };
        writeln!(
            out,
            "| `{key}` | {} | {} | {} |",
            cell(&kind),
            cell(&default),
            cell(description)
        )
        .unwrap();
        let path = title.trim_matches(|c| c == '`' || c == '[' || c == ']');
        let path = if path == "top level" {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        if is_table {
            nested.push((format!("`[{path}]`"), property.clone()));
        } else if is_array_of_tables {
            nested.push((format!("`[[{path}]]`"), property["items"].clone()));
        }
    }
    out.push('\n');
    for (title, schema) in nested {
        config_table(out, &title, &schema);
        // A destination's keys are its kind's: one table per kind.
        for rule in schema["allOf"].as_array().into_iter().flatten() {
            if let (Some(kind), Some(then)) = (
                rule["if"]["properties"]["kind"].get("const"),
                rule.get("then"),
            ) && then.get("properties").is_some()
            {
                let inner = title.trim_matches('`');
                config_table(out, &format!("`{inner}` with `kind = {kind}`"), then);
            }
        }
    }
}

fn config_reference() -> String {
    let schema: Value = serde_json::from_str(&hookledger::cli::schema_text()).unwrap();
    let mut out = String::new();
    config_table(&mut out, "top level", &schema);
    out
}

#[test]
fn the_config_reference_is_the_schema_rendered() {
    let rendered = config_reference();
    // Every key the schema has is in it, nested ones too.
    for key in [
        "listen",
        "session_ttl_secs",
        "gap_timeout_secs",
        "ordered_by_account",
        "interval_secs",
    ] {
        assert!(rendered.contains(&format!("| `{key}` |")), "{key}");
    }
    holds("reference/config.md", &rendered);
}

fn cli_reference() -> String {
    let mut command = hookledger::cli::Cli::command();
    command.build();
    let mut out = String::new();
    let mut stack = vec![(String::from("hookledger"), command)];
    while let Some((name, mut command)) = stack.pop() {
        writeln!(
            out,
            "### `{name}`\n\n```text\n{}\n```\n",
            command.render_long_help().to_string().trim_end()
        )
        .unwrap();
        let mut subcommands: Vec<_> = command
            .get_subcommands()
            .filter(|c| c.get_name() != "help")
            .cloned()
            .collect();
        subcommands.reverse();
        for sub in subcommands {
            stack.push((format!("{name} {}", sub.get_name()), sub));
        }
    }
    out
}

#[test]
fn the_cli_reference_is_the_binarys_own_help() {
    let rendered = cli_reference();
    for command in [
        "serve",
        "init",
        "config-schema",
        "openapi",
        "reconcile",
        "outbox replay",
    ] {
        assert!(
            rendered.contains(&format!("### `hookledger {command}`")),
            "{command}"
        );
    }
    holds("reference/cli.md", &rendered);
}

/// One operation: what it does, its parameters, its body, its answers.
fn operation(out: &mut String, method: &str, path: &str, operation: &Value) {
    let summary = operation["summary"]
        .as_str()
        .unwrap_or_else(|| panic!("{method} {path} has no summary: a doc comment on its handler"));
    writeln!(out, "### `{} {path}`\n\n{summary}\n", method.to_uppercase()).unwrap();
    if let Some(description) = operation["description"].as_str() {
        writeln!(out, "{}\n", description.replace('\n', " ")).unwrap();
    }
    if operation.get("security").is_some() {
        out.push_str("Takes an admin token (`Authorization: Bearer ...`).\n\n");
    }
    if let Some(parameters) = operation["parameters"].as_array() {
        out.push_str("| parameter | in | required | what it is |\n|---|---|---|---|\n");
        for parameter in parameters {
            let description = parameter["description"]
                .as_str()
                .or(parameter["schema"]["description"].as_str())
                .unwrap_or_default();
            writeln!(
                out,
                "| `{}` | {} | {} | {} |",
                parameter["name"].as_str().unwrap(),
                parameter["in"].as_str().unwrap(),
                if parameter["required"] == true {
                    "yes"
                } else {
                    "no"
                },
                cell(description)
            )
            .unwrap();
        }
        out.push('\n');
    }
    if let Some(body) = operation.get("requestBody") {
        let schema = &body["content"]["application/json"]["schema"];
        let name = schema["$ref"]
            .as_str()
            .or(schema["oneOf"][0]["$ref"].as_str())
            .map(|r| r.rsplit('/').next().unwrap().to_owned());
        let required = if body["required"] == true {
            ""
        } else {
            "optional "
        };
        match name {
            Some(name) => writeln!(out, "Body: {required}`{name}` (JSON).\n").unwrap(),
            None => out.push_str("Body: the provider's bytes, as signed.\n\n"),
        }
    }
    out.push_str("| status | when |\n|---|---|\n");
    for (status, response) in operation["responses"].as_object().unwrap() {
        let description = response["description"].as_str().unwrap_or_default();
        writeln!(out, "| {status} | {} |", cell(description)).unwrap();
    }
    out.push('\n');
}

fn http_reference() -> String {
    let document: Value = serde_json::from_str(&hookledger::admin::openapi::text()).unwrap();
    let paths = document["paths"].as_object().unwrap();
    let mut out = String::from("| route | what it does |\n|---|---|\n");
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            let summary = op["summary"].as_str().unwrap_or_default();
            writeln!(out, "| `{} {path}` | {summary} |", method.to_uppercase()).unwrap();
        }
    }
    out.push('\n');
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            operation(&mut out, method, path, op);
        }
    }
    out
}

#[test]
fn the_http_reference_is_the_contract_rendered() {
    let rendered = http_reference();
    for route in [
        "POST /webhooks/{source}",
        "GET /admin/api/events",
        "POST /admin/api/guard/reset",
    ] {
        assert!(rendered.contains(&format!("### `{route}`")), "{route}");
    }
    holds("reference/http.md", &rendered);
}

/// Every page of the book is in its table of contents, and every entry
/// there is a page: mdBook would build a page nobody can reach, or fail.
#[test]
fn every_page_is_in_the_summary() {
    let summary = std::fs::read_to_string(docs("SUMMARY.md")).unwrap();
    let pages: Vec<String> = files_under(&docs(""), "md")
        .iter()
        .map(|path| path.strip_prefix(docs("")).unwrap().display().to_string())
        .filter(|page| page != "SUMMARY.md")
        .collect();
    assert!(pages.len() >= 30, "{pages:?}");
    for page in &pages {
        assert!(
            summary.contains(&format!("]({page})")),
            "{page} is not in SUMMARY.md"
        );
    }
    for entry in summary.split("](").skip(1) {
        let page = &entry[..entry.find(')').unwrap()];
        assert!(
            docs(page).exists(),
            "SUMMARY.md names {page}, which is not a page"
        );
    }
}

/// Every relative link and `#anchor` of the built book (`mdbook build
/// docs`, which `.ci/run` runs before the tests) resolves: a page links
/// only to pages and files the book has, and to ids they carry. lychee's
/// offline check does the same; building it takes 5 to 8 minutes, so CI
/// runs it only with `HOOKLEDGER_SLOW_CHECKS=1`.
#[test]
fn the_built_book_has_no_broken_link() {
    let book = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/book");
    if !book.join("index.html").exists() {
        if std::env::var_os("CI").is_some() {
            panic!("CI is set but target/book is not built: mdbook build docs");
        }
        eprintln!("SKIPPED the_built_book_has_no_broken_link: run mdbook build docs first");
        return;
    }
    let (checked, broken) = broken_links(&book);
    assert!(checked > 500, "only {checked} links");
    assert_eq!(broken, Vec::<String>::new());
}

#[test]
fn a_link_to_a_missing_page_or_id_is_found() {
    let book = tempfile::tempdir().unwrap();
    std::fs::create_dir(book.path().join("sub")).unwrap();
    std::fs::write(
        book.path().join("index.html"),
        r##"<h1 id="top">x</h1><a href="sub/page.html#here">ok</a> <a href="#top">self</a>
        <a href="gone.html">gone</a> <a href="sub/page.html#nowhere">no id</a>
        <a href="https://example.com/x">away</a>"##,
    )
    .unwrap();
    std::fs::write(
        book.path().join("sub/page.html"),
        r#"<p id="here"><a href="../index.html">up</a>"#,
    )
    .unwrap();
    let (checked, broken) = broken_links(book.path());
    assert_eq!(checked, 5);
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(
        broken[0].ends_with("gone.html") && broken[1].ends_with("(no such id)"),
        "{broken:?}"
    );
}

/// The relative links of every page under `book`, and those that do not
/// resolve.
fn broken_links(book: &Path) -> (usize, Vec<String>) {
    let pages = files_under(book, "html");
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for piece in text.split("href=\"").skip(1) {
            let link = piece[..piece.find('"').unwrap()].replace("&amp;", "&");
            if link.contains("://")
                || link.starts_with("mailto:")
                || link.starts_with("javascript:")
            {
                continue;
            }
            checked += 1;
            let (target, fragment) = link_target(page, &link);
            if !target.exists() {
                broken.push(format!("{}: {link}", page.display()));
            } else if !fragment.is_empty()
                && target.extension().is_some_and(|e| e == "html")
                && !std::fs::read_to_string(&target)
                    .unwrap()
                    .contains(&format!("id=\"{fragment}\""))
            {
                broken.push(format!("{}: {link} (no such id)", page.display()));
            }
        }
    }
    (checked, broken)
}
