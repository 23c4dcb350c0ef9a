//! A `generic-hmac` source's signature scheme, from its config keys:
//! `signature_header` (required), `signature_prefix`, `algorithm` (`sha256`,
//! `sha512`), `encoding` (`hex`, `base64`), `signed_payload` (a template of
//! `{body}`, `{timestamp}`, `{id}`), `timestamp_header`, `id_header`. Every
//! combination that would sign less than it reads is refused: an
//! `id_header` the template does not sign, a `{timestamp}` with no header.

use super::ConfigError;
use super::raw::RawSource;
use crate::providers::generic_hmac::{Algorithm, Encoding, Part, Scheme};

/// Header names live as long as the process; a source's few are kept.
fn header_name(text: &str) -> &'static str {
    Box::leak(text.trim().to_ascii_lowercase().into_boxed_str())
}

fn valid_header(text: &str) -> bool {
    !text.trim().is_empty()
        && text
            .trim()
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The scheme, if the source describes one (only generic-hmac sources may).
pub fn scheme(raw: &RawSource, key: &str) -> Result<Option<Scheme>, ConfigError> {
    // Another kind's scheme keys are refused by `kind_keys`.
    let Some(header) = raw
        .signature_header
        .as_deref()
        .filter(|_| raw.kind == "generic-hmac")
    else {
        return Ok(None);
    };
    let err = |name: &str, message: String| ConfigError::new(format!("{key}.{name}"), message);
    for (name, value) in [
        ("signature_header", Some(header)),
        ("timestamp_header", raw.timestamp_header.as_deref()),
        ("id_header", raw.id_header.as_deref()),
    ] {
        if let Some(value) = value
            && !valid_header(value)
        {
            return Err(err(name, format!("{value:?} is not a header name")));
        }
    }
    let algorithm = match raw.algorithm.as_deref().unwrap_or("sha256") {
        "sha256" => Algorithm::Sha256,
        "sha512" => Algorithm::Sha512,
        other => {
            return Err(err(
                "algorithm",
                format!("{other:?} must be sha256 or sha512"),
            ));
        }
    };
    let encoding = match raw.encoding.as_deref().unwrap_or("hex") {
        "hex" => Encoding::Hex,
        "base64" => Encoding::Base64,
        other => return Err(err("encoding", format!("{other:?} must be hex or base64"))),
    };
    let template = Scheme::template(raw.signed_payload.as_deref().unwrap_or("{body}"))
        .map_err(|e| err("signed_payload", e))?;
    let signs = |part: Part| template.contains(&part);
    match (signs(Part::Timestamp), &raw.timestamp_header) {
        (true, None) => {
            return Err(err(
                "timestamp_header",
                "signed_payload signs {timestamp}: name the header that carries it".into(),
            ));
        }
        (false, Some(_)) => {
            return Err(err(
                "signed_payload",
                "a timestamp_header the signature does not cover would be a replay window \
                 anyone can move: put {timestamp} in signed_payload, or drop the header"
                    .into(),
            ));
        }
        _ => {}
    }
    match (signs(Part::Id), &raw.id_header) {
        (true, None) => {
            return Err(err(
                "id_header",
                "signed_payload signs {id}: name the header that carries it".into(),
            ));
        }
        (false, Some(_)) => {
            return Err(err(
                "id_header",
                "the signature does not cover this header, so it cannot key events: put {id} \
                 in signed_payload, or use event_id_path"
                    .into(),
            ));
        }
        _ => {}
    }
    if raw.credit_types.is_none() && raw.debit_types.is_none() {
        return Err(err(
            "credit_types",
            "a generic-hmac source must list the types that credit (or debit)".into(),
        ));
    }
    Ok(Some(Scheme {
        header: header_name(header),
        prefix: raw.signature_prefix.clone().filter(|p| !p.is_empty()),
        algorithm,
        encoding,
        template,
        timestamp_header: raw.timestamp_header.as_deref().map(header_name),
        id_header: raw.id_header.as_deref().map(header_name),
    }))
}

#[cfg(test)]
mod tests {
    use crate::config::from_toml;

    fn error(lines: &str) -> String {
        let text = format!(
            "[admin]\ntoken = \"admin-token-0123456789\"\n[[sources]]\nname = \"g\"\n\
             kind = \"generic-hmac\"\nsecrets = [\"s\"]\ncredit_types = [\"sale\"]\n{lines}\n"
        );
        from_toml(&text, &|_| None).unwrap_err().to_string()
    }

    #[test]
    fn a_scheme_may_not_read_more_than_it_signs() {
        assert!(
            error("id_header = \"X-Id\"\nsignature_header = \"X-Sig\"")
                .contains("sources[g].id_header: the signature does not cover this header")
        );
        assert!(
            error("timestamp_header = \"X-T\"\nsignature_header = \"X-Sig\"").contains(
                "sources[g].signed_payload: a timestamp_header the signature does not cover"
            )
        );
        assert!(
            error("signed_payload = \"{timestamp}.{body}\"\nsignature_header = \"X-Sig\"")
                .contains("sources[g].timestamp_header")
        );
        assert!(error("").contains("sources[g].signature_header: kind generic-hmac needs"));
        assert!(error("signature_header = \"X Sig\"").contains("is not a header name"));
        assert!(
            error("signature_header = \"X-Sig\"\nalgorithm = \"md5\"").contains("sha256 or sha512")
        );
    }

    #[test]
    fn only_generic_sources_describe_a_scheme_and_they_list_types() {
        let text = "[admin]\ntoken = \"admin-token-0123456789\"\n[[sources]]\nname = \"s\"\n\
                    kind = \"stripe\"\nsecrets = [\"s\"]\nsignature_header = \"X-Sig\"\n";
        assert!(
            from_toml(text, &|_| None)
                .unwrap_err()
                .to_string()
                .contains(
                    "kind stripe does not read signature_header; only generic-hmac sources do"
                )
        );
        let untyped = "[admin]\ntoken = \"admin-token-0123456789\"\n[[sources]]\nname = \"g\"\n\
                       kind = \"generic-hmac\"\nsecrets = [\"s\"]\nsignature_header = \"X-Sig\"\n";
        assert!(
            from_toml(untyped, &|_| None)
                .unwrap_err()
                .to_string()
                .contains("must list the types that credit")
        );
    }
}
