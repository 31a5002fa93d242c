CREATE TABLE "chat_connections" (
	"workspace_id" uuid NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"phone_number_id" text NOT NULL,
	"access_token_sealed" "bytea" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "chat_connections_workspace_id_id_pk" PRIMARY KEY("workspace_id","id")
);
--> statement-breakpoint
CREATE TABLE "chat_conversations" (
	"workspace_id" uuid NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"contact_id" uuid NOT NULL,
	"peer" text NOT NULL,
	"phone_number_id" text NOT NULL,
	"last_message_at" timestamp with time zone NOT NULL,
	"last_inbound_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "chat_conversations_workspace_id_id_pk" PRIMARY KEY("workspace_id","id")
);
--> statement-breakpoint
CREATE TABLE "chat_media" (
	"workspace_id" uuid NOT NULL,
	"message_id" uuid NOT NULL,
	"content_type" text NOT NULL,
	"size" bigint NOT NULL,
	"sha256" text NOT NULL,
	"bytes" "bytea" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "chat_media_workspace_id_message_id_pk" PRIMARY KEY("workspace_id","message_id")
);
--> statement-breakpoint
CREATE TABLE "chat_messages" (
	"workspace_id" uuid NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"conversation_id" uuid NOT NULL,
	"direction" text NOT NULL,
	"external_id" text,
	"type" text NOT NULL,
	"content" text NOT NULL,
	"payload" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"sent_at" timestamp with time zone NOT NULL,
	"status" text,
	"status_error" jsonb,
	"sender_user_id" uuid,
	"media_id" text,
	"media_mime_type" text,
	"media_file_name" text,
	"media_bytes" bigint,
	"media_state" text,
	"media_attempts" integer DEFAULT 0 NOT NULL,
	"media_next_at" timestamp with time zone,
	"media_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "chat_messages_workspace_id_id_pk" PRIMARY KEY("workspace_id","id")
);
--> statement-breakpoint
ALTER TABLE "chat_connections" ADD CONSTRAINT "chat_connections_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_conversations" ADD CONSTRAINT "chat_conversations_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_conversations" ADD CONSTRAINT "chat_conversations_contact_fk" FOREIGN KEY ("workspace_id","contact_id") REFERENCES "public"."contacts"("workspace_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_media" ADD CONSTRAINT "chat_media_message_fk" FOREIGN KEY ("workspace_id","message_id") REFERENCES "public"."chat_messages"("workspace_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_messages" ADD CONSTRAINT "chat_messages_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_messages" ADD CONSTRAINT "chat_messages_conversation_fk" FOREIGN KEY ("workspace_id","conversation_id") REFERENCES "public"."chat_conversations"("workspace_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "chat_connections_workspace_key" ON "chat_connections" USING btree ("workspace_id");--> statement-breakpoint
CREATE UNIQUE INDEX "chat_connections_number_key" ON "chat_connections" USING btree ("phone_number_id");--> statement-breakpoint
CREATE UNIQUE INDEX "chat_conversations_peer_key" ON "chat_conversations" USING btree ("workspace_id","phone_number_id","peer");--> statement-breakpoint
CREATE INDEX "chat_conversations_activity_idx" ON "chat_conversations" USING btree ("workspace_id","last_message_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "chat_messages_external_key" ON "chat_messages" USING btree ("workspace_id","external_id");--> statement-breakpoint
CREATE INDEX "chat_messages_conversation_idx" ON "chat_messages" USING btree ("workspace_id","conversation_id","sent_at","id");--> statement-breakpoint
CREATE INDEX "chat_messages_media_due_idx" ON "chat_messages" USING btree ("media_next_at") WHERE media_state = 'pending';