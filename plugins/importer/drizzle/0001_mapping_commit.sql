ALTER TABLE "import_rows" ADD COLUMN "contact_id" uuid;--> statement-breakpoint
ALTER TABLE "imports" ADD COLUMN "mapping" jsonb;--> statement-breakpoint
ALTER TABLE "imports" ADD COLUMN "created_count" integer;--> statement-breakpoint
ALTER TABLE "imports" ADD COLUMN "skipped_count" integer;--> statement-breakpoint
ALTER TABLE "imports" ADD COLUMN "committed_at" timestamp with time zone;