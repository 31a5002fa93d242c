CREATE INDEX "contact_identities_match_idx" ON "contact_identities" USING btree ("workspace_id",(case
    when "identifier" like '%@%' then lower(regexp_replace("identifier", '[+][^@]*@', '@'))
    when "identifier" ~ '^[0-9+(). /-]+$' and length("identifier_digits") >= 7
      then 'tel:' || right("identifier_digits", 9)
  end)) WHERE (case
    when "contact_identities"."identifier" like '%@%' then lower(regexp_replace("contact_identities"."identifier", '[+][^@]*@', '@'))
    when "contact_identities"."identifier" ~ '^[0-9+(). /-]+$' and length("contact_identities"."identifier_digits") >= 7
      then 'tel:' || right("contact_identities"."identifier_digits", 9)
  end) is not null;