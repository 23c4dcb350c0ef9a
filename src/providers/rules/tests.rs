use super::*;
use crate::providers::{JsonPath, provider_for};

#[test]
fn mapped_types_include_what_the_source_lists_itself() {
    let kind = provider_for("standard-webhooks").unwrap();
    let mut mapping = Mapping::with_account_path(JsonPath::parse("data.account_id").unwrap());
    assert_eq!(
        mapped_types(kind.rules(), &mapping),
        ["balance.credit", "balance.debit"]
    );
    mapping.credit_types = Some(vec!["invoice.paid".into(), "balance.credit".into()]);
    assert_eq!(
        mapped_types(kind.rules(), &mapping),
        ["balance.credit", "balance.debit", "invoice.paid"]
    );
    // A list replaces the kind's types of its class.
    mapping.credit_types = Some(vec!["invoice.paid".into()]);
    assert_eq!(
        mapped_types(kind.rules(), &mapping),
        ["balance.debit", "invoice.paid"]
    );
}
