-- contact_search (src/contacts/tables.ts) kept in the statement that changes what `q`
-- searches, whichever path writes (the service, the plugin SDK, an import's bulk insert):
-- a contact's insert, rename or delete, an identity's insert, edit, move or delete.
-- Statement triggers over transition tables, so a bulk write refreshes its contacts in one
-- statement, not one per row. The refresh locks the contacts' search
-- rows and only then reads their identities, in a statement of its own: two transactions
-- adding identities to one contact each see the other's once it commits.
CREATE FUNCTION contact_search_refresh(workspace_ids uuid[], contact_ids uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF workspace_ids IS NULL THEN
    RETURN;
  END IF;
  PERFORM 1 FROM contact_search s
  WHERE (s.workspace_id, s.contact_id) IN (SELECT * FROM unnest(workspace_ids, contact_ids))
  ORDER BY s.workspace_id, s.contact_id
  FOR UPDATE;
  INSERT INTO contact_search (workspace_id, contact_id, sort_name, names, digits)
  SELECT c.workspace_id, c.id, lower(c.name), coalesce(i.names, ''), coalesce(i.digits, '')
  FROM (SELECT DISTINCT * FROM unnest(workspace_ids, contact_ids)) AS k (workspace_id, contact_id)
  JOIN contacts c ON c.workspace_id = k.workspace_id AND c.id = k.contact_id
  LEFT JOIN LATERAL (
    SELECT string_agg(lower(x.display_name), E'\n') AS names,
      string_agg(nullif(x.identifier_digits, ''), E'\n') AS digits
    FROM contact_identities x
    WHERE x.workspace_id = c.workspace_id AND x.contact_id = c.id
  ) i ON true
  ON CONFLICT (workspace_id, contact_id) DO UPDATE
    SET sort_name = excluded.sort_name, names = excluded.names, digits = excluded.digits
    WHERE (contact_search.sort_name, contact_search.names, contact_search.digits)
      IS DISTINCT FROM (excluded.sort_name, excluded.names, excluded.digits);
END $$;
--> statement-breakpoint
-- A new contact has no identity yet (theirs reference it): its row is its name alone.
CREATE FUNCTION contact_search_contacts_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO contact_search (workspace_id, contact_id, sort_name, names, digits)
  SELECT workspace_id, id, lower(name), '', '' FROM added;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION contact_search_contacts_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM contact_search s USING removed r
  WHERE s.workspace_id = r.workspace_id AND s.contact_id = r.id;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION contact_search_contacts_renamed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE workspace_ids uuid[]; contact_ids uuid[];
BEGIN
  SELECT array_agg(n.workspace_id), array_agg(n.id) INTO workspace_ids, contact_ids
  FROM after n JOIN before o ON o.workspace_id = n.workspace_id AND o.id = n.id
  WHERE o.name IS DISTINCT FROM n.name;
  PERFORM contact_search_refresh(workspace_ids, contact_ids);
  RETURN NULL;
END $$;
--> statement-breakpoint
-- New identities only add to their contacts' lists: appended in one update, whose row lock
-- (and re-read of the row a concurrent writer just committed) keeps two writers' additions.
CREATE FUNCTION contact_search_identities_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
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
--> statement-breakpoint
CREATE FUNCTION contact_search_identities_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE workspace_ids uuid[]; contact_ids uuid[];
BEGIN
  WITH moved AS (
    SELECT o.workspace_id, o.contact_id AS was, n.contact_id AS now
    FROM after n JOIN before o ON o.workspace_id = n.workspace_id AND o.id = n.id
    WHERE (o.contact_id, o.display_name, o.identifier_digits)
      IS DISTINCT FROM (n.contact_id, n.display_name, n.identifier_digits)
  )
  SELECT array_agg(k.workspace_id), array_agg(k.contact_id) INTO workspace_ids, contact_ids
  FROM (SELECT workspace_id, was FROM moved UNION SELECT workspace_id, now FROM moved)
    AS k (workspace_id, contact_id);
  PERFORM contact_search_refresh(workspace_ids, contact_ids);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION contact_search_identities_removed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE workspace_ids uuid[]; contact_ids uuid[];
BEGIN
  SELECT array_agg(workspace_id), array_agg(contact_id) INTO workspace_ids, contact_ids
  FROM removed WHERE display_name IS NOT NULL OR identifier_digits <> '';
  PERFORM contact_search_refresh(workspace_ids, contact_ids);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER contact_search_contacts_added AFTER INSERT ON contacts
  REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION contact_search_contacts_added();
--> statement-breakpoint
CREATE TRIGGER contact_search_contacts_renamed AFTER UPDATE ON contacts
  REFERENCING OLD TABLE AS before NEW TABLE AS after
  FOR EACH STATEMENT EXECUTE FUNCTION contact_search_contacts_renamed();
--> statement-breakpoint
CREATE TRIGGER contact_search_contacts_removed AFTER DELETE ON contacts
  REFERENCING OLD TABLE AS removed
  FOR EACH STATEMENT EXECUTE FUNCTION contact_search_contacts_removed();
--> statement-breakpoint
CREATE TRIGGER contact_search_identities_added AFTER INSERT ON contact_identities
  REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION contact_search_identities_added();
--> statement-breakpoint
CREATE TRIGGER contact_search_identities_changed AFTER UPDATE ON contact_identities
  REFERENCING OLD TABLE AS before NEW TABLE AS after
  FOR EACH STATEMENT EXECUTE FUNCTION contact_search_identities_changed();
--> statement-breakpoint
CREATE TRIGGER contact_search_identities_removed AFTER DELETE ON contact_identities
  REFERENCING OLD TABLE AS removed
  FOR EACH STATEMENT EXECUTE FUNCTION contact_search_identities_removed();
--> statement-breakpoint
-- The contacts already stored, in one statement before the trigram index is built
-- (0011): at 1,000,000 contacts and 2,000,000 identities, docs/performance.md.
INSERT INTO contact_search (workspace_id, contact_id, sort_name, names, digits)
SELECT c.workspace_id, c.id, lower(c.name), coalesce(i.names, ''), coalesce(i.digits, '')
FROM contacts c
LEFT JOIN (
  SELECT x.workspace_id, x.contact_id,
    string_agg(lower(x.display_name), E'\n') AS names,
    string_agg(nullif(x.identifier_digits, ''), E'\n') AS digits
  FROM contact_identities x
  GROUP BY x.workspace_id, x.contact_id
) i ON i.workspace_id = c.workspace_id AND i.contact_id = c.id;
