-- Trigram indexes serve `q` searches on contact names, identity names and identifier digits.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
