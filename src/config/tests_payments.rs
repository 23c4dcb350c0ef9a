//! `payment_path` and `reverses_path`: where they may be set, what they
//! default to, and every problem named by its key; README's example runs.

use super::tests::parse;
use crate::source::Source;

const GENERIC: &str = "name = \"g\"\nkind = \"generic-hmac\"\nsecrets = [\"s\"]\n\
                       signature_header = \"X-Sig\"\n";
const SW: &str = "name = \"s\"\nkind = \"standard-webhooks\"\nsecrets = [\"whsec_YWJj\"]\n";

fn source(lines: &str) -> Source {
    let mut config =
        parse(&format!("[[sources]]\n{lines}"), &[]).unwrap_or_else(|e| panic!("{lines}: {e}"));
    config.sources.remove(0)
}

/// The one problem of a source, as `key: message`.
fn problem(lines: &str) -> String {
    let error = parse(&format!("[[sources]]\n{lines}"), &[]).unwrap_err();
    let all: Vec<_> = error
        .all()
        .map(|e| format!("{}: {}", e.key, e.message))
        .collect();
    assert_eq!(all.len(), 1, "{all:?}");
    all[0].clone()
}

fn paths(source: &Source) -> (Option<&str>, Option<&str>) {
    let mapping = &source.mapping;
    (
        mapping.payment_path.as_ref().map(|p| p.as_str()),
        mapping.reverses_path.as_ref().map(|p| p.as_str()),
    )
}

#[test]
fn both_kinds_take_the_paths_and_payment_path_defaults_to_object_path() {
    let generic = source(&format!(
        "{GENERIC}credit_types = [\"sale\"]\ndebit_types = [\"refund\"]\n\
         payment_path = \"sale.id\"\nreverses_path = \"refund.sale_id\""
    ));
    assert_eq!(paths(&generic), (Some("sale.id"), Some("refund.sale_id")));
    let defaulted = source(&format!(
        "{SW}object_path = \"data.payment\"\nreverses_path = \"data.refunds\""
    ));
    assert_eq!(
        paths(&defaulted),
        (Some("data.payment"), Some("data.refunds"))
    );
    // A source that reverses nothing keeps its credits its own.
    let plain = source(&format!("{SW}object_path = \"data.payment\""));
    assert_eq!(paths(&plain), (None, None));
    let own = source(&format!("{SW}payment_path = \"data.payment\""));
    assert_eq!(paths(&own), (Some("data.payment"), None));
}

#[test]
fn other_kinds_and_bad_paths_are_refused_by_key() {
    assert_eq!(
        problem(
            "name = \"stripe\"\nkind = \"stripe\"\nsecrets = [\"whsec_x\"]\nreverses_path = \"x\""
        ),
        "sources[stripe].reverses_path: kind stripe finds the payments in its own events; only \
         generic-hmac and standard-webhooks sources set reverses_path"
    );
    assert!(
        problem(&format!("{SW}reverses_path = \"data..payment\""))
            .starts_with("sources[s].reverses_path: JSON path \"data..payment\" must be")
    );
    assert!(
        problem(&format!("{SW}payment_path = \"\""))
            .starts_with("sources[s].payment_path: JSON path \"\" must be")
    );
}

#[test]
fn each_path_needs_the_types_it_reads() {
    assert_eq!(
        problem(&format!(
            "{GENERIC}credit_types = [\"sale\"]\npayment_path = \"id\"\nreverses_path = \"of\""
        )),
        "sources[g].reverses_path: names the payment a debit reverses, but this source maps no \
         debit type: list the refund types in debit_types"
    );
    assert!(
        problem(&format!(
            "{SW}debit_types = []\nreverses_path = \"data.of\""
        ))
        .starts_with("sources[s].reverses_path: names the payment a debit reverses")
    );
    assert_eq!(
        problem(&format!(
            "{GENERIC}debit_types = [\"refund\"]\npayment_path = \"id\""
        )),
        "sources[g].payment_path: names the payment a credit is, but this source maps no credit \
         type: list the payment types in credit_types"
    );
    // Refunds whose payments no credit names could never match.
    assert_eq!(
        problem(&format!("{SW}reverses_path = \"data.of\"")),
        "sources[s].payment_path: this source's debits reverse payments (reverses_path), but its \
         credits name none, so no refund could ever be matched: set payment_path (where a \
         credit names its payment) or object_path"
    );
    // A source of refunds only (its payments credited by another source
    // of its scope) names no payment of its own.
    let refunds_only = source(&format!(
        "{SW}credit_types = []\nreverses_path = \"data.of\""
    ));
    assert_eq!(paths(&refunds_only), (None, Some("data.of")));
}

#[test]
fn contiguous_streams_refuse_payments_as_they_do_for_every_kind() {
    for paths in [
        "payment_path = \"data.p\"",
        "object_path = \"data.p\"\nreverses_path = \"data.r\"",
    ] {
        assert!(
            problem(&format!("{SW}ordering = \"contiguous\"\n{paths}")).starts_with(
                "sources[s].ordering: this source's types credit or reverse provider payments"
            ),
            "{paths}"
        );
    }
}

#[test]
fn the_environment_sets_the_paths() {
    let config = parse(
        &format!("[[sources]]\n{SW}"),
        &[
            ("HOOKLEDGER_SOURCE_S_PAYMENT_PATH", "data.p"),
            ("HOOKLEDGER_SOURCE_S_REVERSES_PATH", "data.r"),
        ],
    )
    .unwrap();
    assert_eq!(paths(&config.sources[0]), (Some("data.p"), Some("data.r")));
}

/// The book's example, as written, is a config that runs.
#[test]
fn the_books_example_parses() {
    let page = include_str!("../../docs/money-going-out.md");
    let section = page
        .split("## Refunds from your own sender")
        .nth(1)
        .expect("the book's section");
    let example = section
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("its TOML example");
    let config = parse(
        example,
        &[
            ("INHOUSE_SECRET", "in-house secret"),
            ("LEDGER_WEBHOOK_SECRET", "whsec_YWJj"),
        ],
    )
    .unwrap();
    let found: Vec<_> = config.sources.iter().map(paths).collect();
    assert_eq!(
        found,
        [
            (Some("sale.id"), Some("refund.sale_id")),
            (Some("data.payment_id"), Some("data.payment_id"))
        ]
    );
}
