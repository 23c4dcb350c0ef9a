//! Hash chains over the ledger and the audit trail: what a link is
//! (`hash`), how entries and audit rows are linked as they are written
//! (`entries`, `audit`), how those written without a link are linked
//! after (`backfill`), how every chain is checked (`verify`), and their
//! heads anchored (`anchor`), in parts for the outbox (`parts`).

mod anchor;
mod audit;
mod backfill;
mod entries;
pub mod hash;
mod parts;
mod verify;

pub use anchor::{Anchor, AnchoredHead, digest_of, sign};
pub use backfill::Backfilled;
pub use hash::{EntryLinks, Head};
pub use parts::{AnchorPart, HEADS_PER_PART, PART_TYPE};
pub use verify::{Break, BreakKind, ChainCursor, ChainReport, Trail};
