//! Building the configured sources: one problem list for all of them.

use std::collections::HashSet;

use super::error::{Problems, in_range};
use super::raw::RawSource;
use super::{ConfigError, Env, keys, kind_keys, mapping, ordering, reconcile, scopes};
use crate::domain::SourceName;
use crate::providers::provider_for;
use crate::source::Source;

pub(super) fn build_sources(raw: Vec<RawSource>, env: Env<'_>) -> Result<Vec<Source>, ConfigError> {
    let mut seen = HashSet::new();
    let mut problems = Problems::default();
    let mut sources = Vec::new();
    for (i, raw) in raw.into_iter().enumerate() {
        let key = format!("sources[{i}]");
        let Some(name) = problems.take(
            SourceName::parse(&raw.name)
                .map_err(|e| ConfigError::new(format!("{key}.name"), e.to_string())),
        ) else {
            continue;
        };
        let key = format!("sources[{name}]");
        if !seen.insert(name.clone()) {
            problems.push(ConfigError::new(
                format!("{key}.name"),
                "duplicate source name",
            ));
            continue;
        }
        sources.extend(problems.take(build_source(name, raw, env, &key)));
    }
    problems.into_result()?;
    scopes::check_kinds(&sources)?;
    Ok(sources)
}

/// One source; every problem of it is reported (the kind's first: without a
/// known kind nothing else can be checked).
fn build_source(
    name: SourceName,
    raw: RawSource,
    env: Env<'_>,
    key: &str,
) -> Result<Source, ConfigError> {
    let provider = provider_for(&raw.kind).ok_or_else(|| {
        let known: Vec<_> = crate::providers::known_kinds().collect();
        ConfigError::new(
            format!("{key}.kind"),
            format!("unknown kind {:?} (known: {})", raw.kind, known.join(", ")),
        )
    })?;
    let mut problems = Problems::default();
    for refused in kind_keys::refused(&raw, provider, key) {
        problems.push(refused);
    }
    let keys = problems.take(keys::keys(&raw, provider, env, key));
    let tolerance_secs = problems.take(tolerance(&raw, provider, key));
    let ordering = problems.take(ordering::policy(&raw, provider, key));
    let mapping = problems.take(mapping::mapping(&raw, provider, key));
    if let (Some(ordering), Some(mapping)) = (&ordering, &mapping)
        && ordering.mode == crate::domain::OrderingMode::Contiguous
        && mapping::links_payments(provider, mapping)
    {
        problems.push(ConfigError::new(
            format!("{key}.ordering"),
            "this source's types credit or reverse provider payments, which are matched \
             to each other, and contiguous streams are not: use high-water",
        ));
    }
    let scope = problems.take(match &raw.scope {
        Some(scope) => SourceName::parse(scope)
            .map(|scope| (scope.as_str().to_owned(), true))
            .map_err(|_| {
                ConfigError::new(
                    format!("{key}.scope"),
                    "must be 1-64 characters of a-z, 0-9, '-' or '_'",
                )
            }),
        None if provider.global_ids() => Ok((provider.kind().to_owned(), false)),
        None => Ok((name.as_str().to_owned(), false)),
    });
    let negative_balance = ordering
        .as_ref()
        .and_then(|ordering| problems.take(mapping::negative_balance(&raw, ordering.mode, key)));
    let settings = problems.take(mapping::settings(&raw, provider, key));
    let reconcile = problems.take(reconcile::reconcile(
        raw.reconcile.as_ref(),
        provider,
        env,
        key,
    ));
    problems.into_result()?;
    let (
        Some((keys, key_secrets)),
        Some(tolerance_secs),
        Some(ordering),
        Some(mapping),
        Some((scope, scope_explicit)),
        Some(negative_balance),
        Some(settings),
    ) = (
        keys,
        tolerance_secs,
        ordering,
        mapping,
        scope,
        negative_balance,
        settings,
    )
    else {
        unreachable!("every part is present when no problem was recorded");
    };
    Ok(Source {
        secret_origins: keys::origins(&raw),
        name,
        scope,
        scope_explicit,
        provider,
        keys,
        key_secrets,
        tolerance_secs,
        negative_balance,
        settings,
        ordering,
        mapping,
        reconcile: reconcile.flatten(),
    })
}

/// The source's replay window: the kind's default, or as set.
fn tolerance(
    raw: &RawSource,
    provider: &dyn crate::providers::Provider,
    key: &str,
) -> Result<u64, ConfigError> {
    match (provider.default_tolerance_secs(), raw.tolerance_secs) {
        (0, Some(_)) => Err(ConfigError::new(
            format!("{key}.tolerance_secs"),
            format!(
                "kind {} signs no timestamp, so there is no replay window to set",
                provider.kind()
            ),
        )),
        (0, None) => Ok(0),
        (default, set) => in_range(
            &format!("{key}.tolerance_secs"),
            set.unwrap_or(default),
            1..=7 * 24 * 3600,
        ),
    }
}
