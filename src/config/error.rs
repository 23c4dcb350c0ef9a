//! Config errors, gathered so that one start-up reports all of them.

use std::fmt;

/// What is wrong with a config: the first problem, and every other one found
/// with it, so that one start-up reports all of them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    pub key: String,
    pub message: String,
    pub others: Vec<ConfigError>,
}

impl ConfigError {
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
            others: Vec::new(),
        }
    }

    /// Every problem, the first one first.
    pub fn all(&self) -> impl Iterator<Item = &ConfigError> {
        std::iter::once(self).chain(&self.others)
    }

    /// Several problems as one error; `None` when there are none.
    pub(super) fn gather(problems: Vec<ConfigError>) -> Option<ConfigError> {
        let mut problems = problems
            .into_iter()
            .flat_map(|p| {
                let others = p.others.clone();
                std::iter::once(ConfigError::new(p.key, p.message)).chain(others)
            })
            .collect::<Vec<_>>()
            .into_iter();
        let mut first = problems.next()?;
        first.others = problems.collect();
        Some(first)
    }

    pub(super) fn prefix_keys(mut self, prefix: &str) -> Self {
        self.key = format!("{prefix}: {}", self.key);
        self.others = self
            .others
            .into_iter()
            .map(|o| o.prefix_keys(prefix))
            .collect();
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.others.is_empty() {
            return write!(f, "config error: {}: {}", self.key, self.message);
        }
        write!(f, "{} config errors:", 1 + self.others.len())?;
        for problem in self.all() {
            write!(f, "\n  {}: {}", problem.key, problem.message)?;
        }
        Ok(())
    }
}

/// A parse error's message without the strings it quotes (`invalid type:
/// string "whsec_...", expected a sequence`): the value may be a secret.
pub(super) fn without_strings(message: &str) -> String {
    let mut out = String::new();
    let mut rest = message;
    while let Some(at) = rest.find("string \"") {
        out.push_str(&rest[..at]);
        out.push_str("a string");
        let quoted = &rest[at + "string \"".len()..];
        let mut end = None;
        let mut escaped = false;
        for (i, c) in quoted.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => {
                    end = Some(i + 1);
                    break;
                }
                _ => escaped = false,
            }
        }
        rest = end.map_or("", |end| &quoted[end..]);
    }
    out.push_str(rest);
    out
}

/// Problems found while building a config, gathered rather than returned at
/// the first.
#[derive(Default)]
pub(super) struct Problems(Vec<ConfigError>);

impl Problems {
    /// The value, or `None` with its error recorded.
    pub(super) fn take<T>(&mut self, result: Result<T, ConfigError>) -> Option<T> {
        result.map_err(|e| self.0.push(e)).ok()
    }

    /// `value` of `key` if it is within `range`; else the problem is
    /// recorded.
    pub(super) fn within(
        &mut self,
        key: &str,
        value: u64,
        range: std::ops::RangeInclusive<u64>,
    ) -> Option<u64> {
        self.take(in_range(key, value, range))
    }

    pub(super) fn push(&mut self, error: ConfigError) {
        self.0.push(error);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(super) fn into_result(self) -> Result<(), ConfigError> {
        ConfigError::gather(self.0).map_or(Ok(()), Err)
    }
}

/// `Err` for a number outside `range`, naming the key.
pub(super) fn in_range(
    key: &str,
    value: u64,
    range: std::ops::RangeInclusive<u64>,
) -> Result<u64, ConfigError> {
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(ConfigError::new(
            key,
            format!("must be between {} and {}", range.start(), range.end()),
        ))
    }
}
