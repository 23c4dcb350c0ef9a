-- Hash chains over the ledger and the audit trail. Keep in step with
-- ../postgres/0018_chains.sql, which says what each column is.
alter table ledger_entries add column prev_hash blob;
alter table ledger_entries add column entry_hash blob;
alter table ledger_entries add column chained_at text;
alter table audit_log add column chain_seq integer;
alter table audit_log add column prev_hash blob;
alter table audit_log add column row_hash blob;
alter table audit_log add column chained_at text;
create table audit_chain (
    chain_id    integer primary key check (chain_id = 1),
    chain_seq   integer not null check (chain_seq >= 0),
    head        blob,
    last_audit_id integer not null check (last_audit_id >= 0)
);
insert into audit_chain (chain_id, chain_seq, head, last_audit_id) values (1, 0, null, 0);
insert into schema_compatibility (version, readable_from, description)
values (18, 17, 'chains: nullable columns and a new table');
