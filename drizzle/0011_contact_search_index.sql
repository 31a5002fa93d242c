CREATE INDEX "contact_search_trgm_idx" ON "contact_search" USING gin ("sort_name" gin_trgm_ops,"names" gin_trgm_ops,"digits" gin_trgm_ops);--> statement-breakpoint
-- The planner sees the rows 0010 wrote (autovacuum may be off or not yet round).
ANALYZE "contact_search";