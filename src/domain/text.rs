//! Text read out of a signed body that is stored or shown even when it is
//! unusable: every byte sequence must survive both backends (PostgreSQL's
//! `text` refuses NUL) and stay readable on a page or in a log line.

/// Longest free text (a rejection reason, an unusable event type) we store.
pub const MAX_NOTE_BYTES: usize = 1000;

/// Whether `text` is stored as it is: at most `max_bytes`, no control
/// characters.
pub fn is_plain(text: &str, max_bytes: usize) -> bool {
    text.len() <= max_bytes && !text.chars().any(char::is_control)
}

/// `text` as it can always be stored and shown: control characters written
/// as `\u{..}` escapes, cut at a character boundary to at most `max_bytes`
/// (an ellipsis marks the cut).
pub fn storable(text: &str, max_bytes: usize) -> String {
    if is_plain(text, max_bytes) {
        return text.to_owned();
    }
    const CUT: &str = "…";
    let budget = max_bytes.saturating_sub(CUT.len());
    let mut out = String::new();
    for c in text.chars() {
        let piece = if c.is_control() {
            c.escape_unicode().to_string()
        } else {
            c.to_string()
        };
        if out.len() + piece.len() > budget {
            out.push_str(CUT);
            return out;
        }
        out.push_str(&piece);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_kept_as_it_is() {
        assert_eq!(
            storable("payment_intent.succeeded", 255),
            "payment_intent.succeeded"
        );
        assert_eq!(storable("", 255), "");
        assert!(is_plain("é €", 255));
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(storable("pi_\u{0}1\n", 255), "pi_\\u{0}1\\u{a}");
        assert!(!is_plain("a\u{7f}", 255));
        assert_eq!(storable("a\u{7f}", 255), "a\\u{7f}");
    }

    #[test]
    fn long_text_is_cut_at_a_character_boundary() {
        let cut = storable(&"é".repeat(300), 255);
        assert!(cut.len() <= 255, "{}", cut.len());
        assert!(cut.ends_with('…'));
        assert!(cut.starts_with("éé"));
        let escaped = storable(&"\u{0}".repeat(100), 20);
        assert!(escaped.len() <= 20, "{escaped}");
        assert_eq!(escaped, "\\u{0}\\u{0}\\u{0}…");
    }
}
