-- Which binaries may run against this schema. Keep in step with
-- ../sqlite/0017_schema_compatibility.sql.
-- From this migration on, every migration adds its own row here, in its
-- own transaction: `readable_from` is the oldest migration a binary must
-- know to run against a schema that has this one. A migration that only
-- expands (a new table, a nullable column, an index) leaves the statements
-- of the binary before it working, and names the migration before it; one
-- that contracts (drops or renames what an older binary reads) names
-- itself. A binary that finds migrations newer than it knows serves only
-- if each of them names one it knows (`store::schema`); older migrations
-- (0001-0016) have no row, and binaries before this one do not look.
-- docs/production/upgrades.md.
set local lock_timeout = '5s';
create table schema_compatibility (
    version        bigint primary key,
    readable_from  bigint not null,
    description    text   not null
);
insert into schema_compatibility (version, readable_from, description)
values (17, 16, 'schema_compatibility: a new table');
