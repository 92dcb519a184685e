-- What a publish and a package read need, kept in indexed columns so that neither costs more
-- as a package's history grows (docs/registry.md#version-lists):
-- - versions.precedence: the version's semver precedence as text (spec.semver.precedence_key),
--   filled for existing rows by db.migrate right after this script, in the same transaction,
--   and written once (a trigger refuses changing it);
-- - packages.version_count: maintained by the publish transaction;
-- - indexes for the publish-order pages and for the highest versions.
-- packages.latest_version was already the "latest" pointer; a publish now compares against it
-- instead of reading every version.
ALTER TABLE versions ADD COLUMN precedence TEXT;
ALTER TABLE packages ADD COLUMN version_count INTEGER NOT NULL DEFAULT 0;
UPDATE packages SET version_count = (SELECT count(*) FROM versions WHERE versions.package_id = packages.id);
CREATE INDEX versions_published ON versions(package_id, published_at, version);
CREATE INDEX versions_precedence ON versions(package_id, precedence);

CREATE TRIGGER versions_precedence_write_once
BEFORE UPDATE OF precedence ON versions
WHEN OLD.precedence IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'published versions are immutable');
END;
