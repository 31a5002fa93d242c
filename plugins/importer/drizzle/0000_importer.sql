CREATE TABLE "import_rows" (
	"workspace_id" uuid NOT NULL,
	"import_id" uuid NOT NULL,
	"line" integer NOT NULL,
	"cells" jsonb NOT NULL,
	"reason" jsonb,
	CONSTRAINT "import_rows_workspace_id_import_id_line_pk" PRIMARY KEY("workspace_id","import_id","line")
);
--> statement-breakpoint
CREATE TABLE "imports" (
	"workspace_id" uuid NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"file_name" text NOT NULL,
	"format" text NOT NULL,
	"state" text NOT NULL,
	"columns" jsonb NOT NULL,
	"row_count" integer NOT NULL,
	"created_by" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "imports_workspace_id_id_pk" PRIMARY KEY("workspace_id","id")
);
--> statement-breakpoint
ALTER TABLE "import_rows" ADD CONSTRAINT "import_rows_import_fk" FOREIGN KEY ("workspace_id","import_id") REFERENCES "public"."imports"("workspace_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "imports" ADD CONSTRAINT "imports_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "imports_created_idx" ON "imports" USING btree ("workspace_id","created_at","id");