CREATE TABLE "chat_refused_inbound" (
	"workspace_id" uuid NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"kind" text NOT NULL,
	"platform_id" text NOT NULL,
	"peer" text NOT NULL,
	"reason" text NOT NULL,
	"detail" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "chat_refused_inbound_workspace_id_id_pk" PRIMARY KEY("workspace_id","id")
);
--> statement-breakpoint
ALTER TABLE "chat_refused_inbound" ADD CONSTRAINT "chat_refused_inbound_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "chat_refused_inbound_item_key" ON "chat_refused_inbound" USING btree ("workspace_id","kind","platform_id");--> statement-breakpoint
CREATE INDEX "chat_refused_inbound_recent_idx" ON "chat_refused_inbound" USING btree ("workspace_id","created_at","id");--> statement-breakpoint
CREATE INDEX "chat_refused_inbound_created_idx" ON "chat_refused_inbound" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "chat_early_statuses_created_idx" ON "chat_early_statuses" USING btree ("created_at");