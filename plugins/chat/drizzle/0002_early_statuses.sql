CREATE TABLE "chat_early_statuses" (
	"workspace_id" uuid NOT NULL,
	"external_id" text NOT NULL,
	"status" text NOT NULL,
	"status_error" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "chat_early_statuses_workspace_id_external_id_status_pk" PRIMARY KEY("workspace_id","external_id","status")
);
