//! Hash chains over the ledger and the audit trail: what a link is
//! (`hash`), how entries and audit rows are linked as they are written
//! (`entries`, `audit`), how those written without a link are linked
//! after (`backfill`), and how every chain is checked (`verify`).

mod anchor;
mod audit;
mod backfill;
mod entries;
pub mod hash;
mod verify;

pub use anchor::{Anchor, AnchoredHead, digest_of, sign};
pub use backfill::Backfilled;
pub use hash::{EntryLinks, Head};
pub use verify::{Break, BreakKind, ChainCursor, ChainReport, Trail};
