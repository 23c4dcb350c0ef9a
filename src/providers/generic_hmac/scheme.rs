//! How a `generic-hmac` source signs, as its config describes it: the
//! algorithm, the encoding and the signed payload's template. Apart from the
//! kind so that the contract's per-source settings can carry a scheme
//! without importing the kind.

use crate::providers::header_tag::Encoding;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Sha256,
    Sha512,
}

/// One piece of the signed payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Body,
    Timestamp,
    Id,
    Literal(String),
}

/// How a generic source signs, from its config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheme {
    pub header: &'static str,
    pub prefix: Option<String>,
    pub algorithm: Algorithm,
    pub encoding: Encoding,
    pub template: Vec<Part>,
    pub timestamp_header: Option<&'static str>,
    pub id_header: Option<&'static str>,
}

impl Scheme {
    /// Parses `signed_payload`: `{body}` exactly once, `{timestamp}` and
    /// `{id}` at most once each, anything else literal.
    pub fn template(text: &str) -> Result<Vec<Part>, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let next = ["{body}", "{timestamp}", "{id}"]
                .iter()
                .filter_map(|p| rest.find(p).map(|at| (at, *p)))
                .min();
            match next {
                Some((0, placeholder)) => {
                    parts.push(match placeholder {
                        "{body}" => Part::Body,
                        "{timestamp}" => Part::Timestamp,
                        _ => Part::Id,
                    });
                    rest = &rest[placeholder.len()..];
                }
                Some((at, _)) => {
                    parts.push(Part::Literal(rest[..at].to_owned()));
                    rest = &rest[at..];
                }
                None => {
                    parts.push(Part::Literal(rest.to_owned()));
                    rest = "";
                }
            }
        }
        let count = |part: &Part| parts.iter().filter(|p| *p == part).count();
        if count(&Part::Body) != 1 || count(&Part::Timestamp) > 1 || count(&Part::Id) > 1 {
            return Err(format!(
                "{text:?} must contain {{body}} once, and {{timestamp}} and {{id}} at most once"
            ));
        }
        Ok(parts)
    }

    pub(super) fn signs(&self, part: &Part) -> bool {
        self.template.contains(part)
    }
}
