-- Which binaries may run against this schema. Keep in step with
-- ../postgres/0017_schema_compatibility.sql, which says how it is read.
create table schema_compatibility (
    version        integer primary key,
    readable_from  integer not null,
    description    text    not null
);
insert into schema_compatibility (version, readable_from, description)
values (17, 16, 'schema_compatibility: a new table');
