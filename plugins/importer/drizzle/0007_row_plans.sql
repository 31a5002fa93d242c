ALTER TABLE "import_rows" ADD COLUMN "plan" jsonb;--> statement-breakpoint
ALTER TABLE "imports" ADD COLUMN "planned_with" text;