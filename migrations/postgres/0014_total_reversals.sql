-- A payment whose refunds were counted as a running total (Stripe's
-- `charge.refunded`, a `total` reversal) takes no per-refund reversal after
-- (`refund.created`, an `each` one, say after a config change or a replay):
-- both would count the same refund. The check reads this index: the few
-- rows of a payment's `total` reversals.
create index intents_total_reversals on intents (scope, payment_ref)
    where reversal = 'total';
