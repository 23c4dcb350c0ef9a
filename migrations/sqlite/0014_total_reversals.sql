-- Keep in step with ../postgres/0014_total_reversals.sql, which explains it.
create index intents_total_reversals on intents (scope, payment_ref)
    where reversal = 'total';
