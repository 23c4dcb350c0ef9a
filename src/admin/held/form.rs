//! The bulk form: what its checkboxes carry (each event with the status
//! the page showed) and how the preview's and the action's forms are read
//! back, checked, sorted and without repeats.

use crate::admin::target::plain_id;
use crate::domain::Status;
use crate::http::ApiError;
use crate::operator::Action;

/// Events listed, and acted on, at once.
pub(super) const LIMIT: i64 = 500;

/// The bulk form's bound in bytes: [`LIMIT`] picks of the longest status,
/// source and event id (255 bytes each), every byte percent-encoded, with
/// the longest note, fits (about 820 KB; the test below builds it).
pub(super) const FORM_BYTES: usize = 1024 * 1024;

/// A checkbox's value: `status@source:event_id`, the status the page
/// showed (source names and statuses hold no `@` or `:`).
pub(super) fn pick(status: &str, source: &str, event_id: &str) -> String {
    format!("{status}@{source}:{event_id}")
}

/// One picked event: its source, its id, and the status the page that
/// offered it showed (the action takes the event only from that status;
/// none from a form that does not say).
pub(super) type Pick = (String, String, Option<String>);

/// The form: the action, the events picked, the note (on the confirm).
/// Parsed by hand: a repeated `pick` field is a list.
pub(super) struct BulkForm {
    pub csrf: String,
    pub action: Action,
    pub picks: Vec<Pick>,
    pub note: Option<String>,
}

impl BulkForm {
    pub fn parse(pairs: Vec<(String, String)>) -> Result<Self, ApiError> {
        let (mut csrf, mut action, mut picks, mut note) = (String::new(), None, Vec::new(), None);
        for (key, value) in pairs {
            match key.as_str() {
                "csrf" => csrf = value,
                "action" => action = Action::parse(&value),
                "note" => note = Some(value),
                "pick" => {
                    let (head, event_id) = value.split_once(':').ok_or_else(|| {
                        ApiError::BadRequest("a pick is status@source:event_id".into())
                    })?;
                    let (seen, source) = match head.split_once('@') {
                        Some((status, source)) => {
                            status.parse::<Status>().map_err(|e| {
                                ApiError::BadRequest(format!("a pick's status: {e}"))
                            })?;
                            (Some(status.to_owned()), source)
                        }
                        None => (None, head),
                    };
                    picks.push((
                        plain_id("source", source.to_owned())?,
                        plain_id("event id", event_id.to_owned())?,
                        seen,
                    ));
                }
                _ => {}
            }
        }
        let action =
            action.ok_or_else(|| ApiError::BadRequest("action is apply or dismiss".into()))?;
        if picks.is_empty() {
            return Err(ApiError::BadRequest("choose at least one event".into()));
        }
        if picks.len() > LIMIT as usize {
            return Err(ApiError::BadRequest(format!(
                "at most {LIMIT} events at once"
            )));
        }
        picks.sort();
        picks.dedup();
        Ok(Self {
            csrf,
            action,
            picks,
            note,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte of `text` percent-encoded, as a browser sends a byte
    /// outside the unreserved set.
    fn encoded(text: &str) -> String {
        text.bytes().map(|b| format!("%{b:02X}")).collect()
    }

    #[test]
    fn the_largest_bulk_form_fits_its_bound() {
        let longest_status = Status::ALL
            .iter()
            .map(|s| s.as_str())
            .max_by_key(|s| s.len())
            .unwrap();
        let source = "s".repeat(255);
        let event_id = "/".repeat(255);
        let mut form = format!("csrf={}&action=dismiss", "c".repeat(128));
        for _ in 0..LIMIT {
            let value = pick(longest_status, &source, &event_id);
            form.push_str(&format!("&pick={}", encoded(&value)));
        }
        // The note's bound is in characters: four bytes each at most.
        let note = "\u{1F4B8}".repeat(crate::admin::input::MAX_NOTE_CHARS);
        form.push_str(&format!("&note={}", encoded(&note)));
        assert!(form.len() > 800_000, "{}", form.len());
        assert!(form.len() <= FORM_BYTES, "{} > {FORM_BYTES}", form.len());
    }
}
