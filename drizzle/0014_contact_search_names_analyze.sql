-- The planner's statistics of the new index expression (0013): autovacuum may be off or
-- not yet round, as in 0011.
ANALYZE "contact_search";
