//! Which sources share a scope (the first half of the intent key), checked
//! once the sources are built: a scope holds the events of one kind only,
//! and sources of one kind that end up in different scopes are worth a
//! warning, since the same event delivered to both would apply twice.

use std::collections::BTreeMap;

use super::ConfigError;
use crate::source::Source;

/// Refuses a scope shared by sources of different kinds: two providers' event
/// ids are not one namespace, and an id of one could hide an event of the
/// other.
pub(super) fn check_kinds(sources: &[Source]) -> Result<(), ConfigError> {
    let mut kinds: BTreeMap<&str, &Source> = BTreeMap::new();
    for source in sources {
        let first = *kinds.entry(source.scope.as_str()).or_insert(source);
        if first.provider.kind() != source.provider.kind() {
            return Err(ConfigError::new(
                format!("sources[{}].scope", source.name),
                format!(
                    "scope {:?} is also the scope of source {} (kind {}); a scope holds one \
                     kind's events: set another scope on one of them",
                    source.scope,
                    first.name,
                    first.provider.kind()
                ),
            ));
        }
    }
    Ok(())
}

/// One line per kind whose sources are in different scopes where that is
/// likely a mistake: for a kind whose ids are provider-wide, any split (an
/// endpoint being moved must share the old one's scope); for any kind, two
/// different scopes set explicitly.
pub fn scope_warnings(sources: &[Source]) -> Vec<String> {
    let mut by_kind: BTreeMap<&str, Vec<&Source>> = BTreeMap::new();
    for source in sources {
        by_kind
            .entry(source.provider.kind())
            .or_default()
            .push(source);
    }
    by_kind
        .into_iter()
        .filter_map(|(kind, sources)| {
            let global = sources.first()?.provider.global_ids();
            let considered: Vec<&Source> = sources
                .into_iter()
                .filter(|s| global || s.scope_explicit)
                .collect();
            let mut scopes: Vec<&str> = considered.iter().map(|s| s.scope.as_str()).collect();
            scopes.sort_unstable();
            scopes.dedup();
            (scopes.len() > 1).then(|| {
                let named: Vec<String> = considered
                    .iter()
                    .map(|s| format!("{} (scope {})", s.name, s.scope))
                    .collect();
                format!(
                    "sources of kind {kind} are in different scopes: {}; an event delivered \
                     to more than one of them is applied once per scope",
                    named.join(", ")
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Env, from_toml};

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn sources(toml: &str) -> Result<Vec<Source>, ConfigError> {
        let env: Env<'_> = &no_env;
        from_toml(
            &format!("[admin]\ntoken = \"0123456789abcdef\"\n{toml}"),
            env,
        )
        .map(|config| config.sources)
    }

    const TWO_STRIPE: &str = "
[[sources]]
name = \"stripe\"
kind = \"stripe\"
secrets = [\"whsec_a\"]
[[sources]]
name = \"stripe-new\"
kind = \"stripe\"
secrets = [\"whsec_b\"]
";

    #[test]
    fn provider_wide_ids_share_the_kind_scope_and_others_are_per_source() {
        let built = sources(&format!(
            "{TWO_STRIPE}
[[sources]]
name = \"sw\"
kind = \"standard-webhooks\"
secrets = [\"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"]
"
        ))
        .unwrap();
        let scopes: Vec<&str> = built.iter().map(|s| s.scope.as_str()).collect();
        assert_eq!(scopes, ["stripe", "stripe", "sw"]);
        assert!(scope_warnings(&built).is_empty());
    }

    #[test]
    fn a_split_of_a_provider_wide_kind_is_warned_about_by_name() {
        let built = sources(&format!("{TWO_STRIPE}scope = \"elsewhere\"\n")).unwrap();
        assert_eq!(built[1].scope, "elsewhere");
        let warnings = scope_warnings(&built);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("stripe (scope stripe)"),
            "{warnings:?}"
        );
        assert!(
            warnings[0].contains("stripe-new (scope elsewhere)"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_scope_holds_one_kind_and_must_be_a_plain_name() {
        let error = sources(&format!(
            "{TWO_STRIPE}
[[sources]]
name = \"sw\"
kind = \"standard-webhooks\"
secrets = [\"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"]
scope = \"stripe\"
"
        ))
        .unwrap_err();
        assert_eq!(error.key, "sources[sw].scope");
        assert!(error.message.contains("kind stripe"), "{error}");
        let error = sources(&format!("{TWO_STRIPE}scope = \"Bad Scope\"\n")).unwrap_err();
        assert_eq!(error.key, "sources[stripe-new].scope");
    }
}
