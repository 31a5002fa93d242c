CREATE TABLE "import_progress" (
	"workspace_id" uuid NOT NULL,
	"import_id" uuid NOT NULL,
	"stage" text NOT NULL,
	"done" integer NOT NULL,
	"total" integer NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "import_progress_workspace_id_import_id_pk" PRIMARY KEY("workspace_id","import_id")
);
--> statement-breakpoint
ALTER TABLE "import_progress" ADD CONSTRAINT "import_progress_import_fk" FOREIGN KEY ("workspace_id","import_id") REFERENCES "public"."imports"("workspace_id","id") ON DELETE cascade ON UPDATE no action;