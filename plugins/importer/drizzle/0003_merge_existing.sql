ALTER TABLE "import_rows" ADD COLUMN "outcome" text;--> statement-breakpoint
ALTER TABLE "imports" ADD COLUMN "existing_contacts" text DEFAULT 'skip' NOT NULL;--> statement-breakpoint
ALTER TABLE "imports" ADD COLUMN "merged_count" integer;