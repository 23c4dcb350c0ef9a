//! The bulk form: what its checkboxes carry (each event with the status
//! the page showed) and how the preview's and the action's forms are read
//! back, checked, sorted and without repeats.

use crate::admin::target::plain_id;
use crate::domain::Status;
use crate::http::ApiError;
use crate::operator::Action;

/// Events listed, and acted on, at once.
pub(super) const LIMIT: i64 = 500;

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
