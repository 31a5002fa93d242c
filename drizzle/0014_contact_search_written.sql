-- A bulk writer that writes its contacts' search rows itself, in the statement that adds
-- the contacts and their identities (src/contacts/staged.ts `createContactsFrom`), marks
-- its transaction with `svc.contact_search = 'written'` around that statement: the two
-- triggers that keep new rows would otherwise insert each contact's row with its name and
-- rewrite it with its identities (every trigram indexed twice). Edits, moves and deletes
-- keep their triggers whatever the mark says.
CREATE OR REPLACE FUNCTION contact_search_contacts_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('svc.contact_search', true) = 'written' THEN
    RETURN NULL;
  END IF;
  INSERT INTO contact_search (workspace_id, contact_id, sort_name, names, digits)
  SELECT workspace_id, id, lower(name), '', '' FROM added;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION contact_search_identities_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('svc.contact_search', true) = 'written' THEN
    RETURN NULL;
  END IF;
  UPDATE contact_search s
  SET names = concat_ws(E'\n', nullif(s.names, ''), a.names),
    digits = concat_ws(E'\n', nullif(s.digits, ''), a.digits)
  FROM (
    SELECT workspace_id, contact_id, string_agg(lower(display_name), E'\n') AS names,
      string_agg(nullif(identifier_digits, ''), E'\n') AS digits
    FROM added
    WHERE display_name IS NOT NULL OR identifier_digits <> ''
    GROUP BY workspace_id, contact_id
  ) a
  WHERE s.workspace_id = a.workspace_id AND s.contact_id = a.contact_id;
  RETURN NULL;
END $$;
