CREATE TABLE "contact_search" (
	"workspace_id" uuid NOT NULL,
	"contact_id" uuid NOT NULL,
	"sort_name" text NOT NULL,
	"names" text NOT NULL,
	"digits" text NOT NULL,
	CONSTRAINT "contact_search_workspace_id_contact_id_pk" PRIMARY KEY("workspace_id","contact_id")
);
--> statement-breakpoint
DROP INDEX "contact_identities_display_trgm_idx";--> statement-breakpoint
DROP INDEX "contact_identities_digits_trgm_idx";