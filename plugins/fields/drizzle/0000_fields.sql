CREATE TABLE "contact_field_entries" (
	"workspace_id" uuid NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"contact_id" uuid NOT NULL,
	"field_id" uuid NOT NULL,
	"cells" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "contact_field_entries_workspace_id_id_pk" PRIMARY KEY("workspace_id","id")
);
--> statement-breakpoint
CREATE TABLE "contact_field_values" (
	"workspace_id" uuid NOT NULL,
	"contact_id" uuid NOT NULL,
	"field_id" uuid NOT NULL,
	"value" jsonb NOT NULL,
	"search" text GENERATED ALWAYS AS (case when jsonb_typeof(value) = 'string' then lower(value #>> '{}') end) STORED,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "contact_field_values_workspace_id_contact_id_field_id_pk" PRIMARY KEY("workspace_id","contact_id","field_id")
);
--> statement-breakpoint
CREATE TABLE "field_definitions" (
	"workspace_id" uuid NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"label" text NOT NULL,
	"kind" text NOT NULL,
	"settings" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"position" integer NOT NULL,
	"archived_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "field_definitions_workspace_id_id_pk" PRIMARY KEY("workspace_id","id")
);
--> statement-breakpoint
ALTER TABLE "contact_field_entries" ADD CONSTRAINT "contact_field_entries_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_field_entries" ADD CONSTRAINT "contact_field_entries_contact_fk" FOREIGN KEY ("workspace_id","contact_id") REFERENCES "public"."contacts"("workspace_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_field_entries" ADD CONSTRAINT "contact_field_entries_field_fk" FOREIGN KEY ("workspace_id","field_id") REFERENCES "public"."field_definitions"("workspace_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_field_values" ADD CONSTRAINT "contact_field_values_contact_fk" FOREIGN KEY ("workspace_id","contact_id") REFERENCES "public"."contacts"("workspace_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_field_values" ADD CONSTRAINT "contact_field_values_field_fk" FOREIGN KEY ("workspace_id","field_id") REFERENCES "public"."field_definitions"("workspace_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "field_definitions" ADD CONSTRAINT "field_definitions_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "contact_field_entries_contact_idx" ON "contact_field_entries" USING btree ("workspace_id","contact_id","field_id","created_at","id");--> statement-breakpoint
CREATE INDEX "contact_field_values_value_idx" ON "contact_field_values" USING btree ("workspace_id","field_id",md5("value"::text));--> statement-breakpoint
CREATE INDEX "contact_field_values_search_idx" ON "contact_field_values" USING gin ("search" gin_trgm_ops);--> statement-breakpoint
CREATE UNIQUE INDEX "field_definitions_name_key" ON "field_definitions" USING btree ("workspace_id","name");