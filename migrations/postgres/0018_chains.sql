-- Hash chains over the ledger and the audit trail (docs/operating/chains.md).
-- Keep in step with ../sqlite/0018_chains.sql.
--
-- Each ledger entry carries its link (`entry_hash`: SHA-256 over its content
-- and the link before it in its account's sequence, per currency) and that
-- previous link (`prev_hash`), so `hookledger verify` can tell an edited
-- entry (its own link is wrong) from a deleted, inserted or moved one (its
-- previous link names no entry or the wrong one). A chain's head is its
-- last entry (`account_seq` = the balance's `postings`), found by the
-- unique key. `chained_at` is set only on an entry linked after it was written
-- (by the backfill of the entries before this migration, or those an older
-- version wrote during an upgrade); an entry linked as it is written has
-- none. The audit trail is one chain, numbered by `chain_seq`, its head in
-- `audit_chain`.
--
-- Expands only (nullable columns and a new table):
-- the version before this one still runs against it, and its entries are
-- linked later (`store::chain`). Adding the columns rewrites nothing.
set local lock_timeout = '5s';
set local statement_timeout = '60s';
alter table ledger_entries
    add column prev_hash bytea,
    add column entry_hash bytea,
    add column chained_at timestamptz;
alter table audit_log
    add column chain_seq bigint,
    add column prev_hash bytea,
    add column row_hash bytea,
    add column chained_at timestamptz;
-- One row: the audit chain's head, and the highest audit id linked. Its
-- row lock orders the audit rows of concurrent transactions
-- (`store::chain::audit`). No index on the new columns: the audit trail is
-- read whole, in chain order, by `verify` only.
create table audit_chain (
    chain_id    bigint  primary key check (chain_id = 1),
    chain_seq   bigint  not null check (chain_seq >= 0),
    head        bytea,
    last_audit_id bigint not null check (last_audit_id >= 0)
);
insert into audit_chain (chain_id, chain_seq, head, last_audit_id) values (1, 0, null, 0);
insert into schema_compatibility (version, readable_from, description)
values (18, 17, 'chains: nullable columns and a new table');
