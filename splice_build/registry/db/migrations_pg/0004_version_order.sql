-- migrations/0004_version_order.sql in PostgreSQL's spelling: the indexes sort with the "C"
-- collation the store's ORDER BY uses (code points, as SQLite), so they serve those queries.
ALTER TABLE versions ADD COLUMN precedence TEXT;
ALTER TABLE packages ADD COLUMN version_count INTEGER NOT NULL DEFAULT 0;
UPDATE packages SET version_count = (SELECT count(*) FROM versions WHERE versions.package_id = packages.id);
CREATE INDEX versions_published ON versions (package_id, published_at COLLATE "C", version COLLATE "C");
CREATE INDEX versions_precedence ON versions (package_id, precedence COLLATE "C");

CREATE TRIGGER versions_precedence_write_once
BEFORE UPDATE OF precedence ON versions
FOR EACH ROW WHEN (OLD.precedence IS NOT NULL)
EXECUTE FUNCTION splice_refuse('published versions are immutable');
