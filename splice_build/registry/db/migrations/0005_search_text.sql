-- packages.search_text: the description as search compares it (db/search_key.py), so that
-- SQLite and PostgreSQL ignore case alike, for all of Unicode. Filled for existing rows by
-- db.migrate right after this script, in the same transaction; written by every publish
-- that writes the description.
ALTER TABLE packages ADD COLUMN search_text TEXT NOT NULL DEFAULT '';
