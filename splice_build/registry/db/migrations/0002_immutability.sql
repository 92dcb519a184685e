-- Published versions are immutable, enforced by the database itself (docs/compatibility.md#registry-api):
-- no update of identity columns, no delete, provenance written once. Only the artifact
-- location (backend, url) may change, e.g. when artifacts move to another store.
CREATE TRIGGER versions_identity_immutable
BEFORE UPDATE OF package_id, version, manifest, integrity, size, artifact_key, published_by, published_at
ON versions
BEGIN
    SELECT RAISE(ABORT, 'published versions are immutable');
END;

CREATE TRIGGER versions_no_delete
BEFORE DELETE ON versions
BEGIN
    SELECT RAISE(ABORT, 'published versions cannot be deleted');
END;

CREATE TRIGGER versions_provenance_write_once
BEFORE UPDATE OF provenance ON versions
WHEN OLD.provenance IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'provenance is write-once');
END;

CREATE TRIGGER packages_no_delete
BEFORE DELETE ON packages
BEGIN
    SELECT RAISE(ABORT, 'packages cannot be deleted');
END;

CREATE TRIGGER tokens_hash_immutable
BEFORE UPDATE OF id, user_id, token_hash, created_at ON tokens
BEGIN
    SELECT RAISE(ABORT, 'token identity is immutable');
END;

CREATE TRIGGER signing_keys_identity_immutable
BEFORE UPDATE OF key_id, namespace, public_key, added_by, added_at ON signing_keys
BEGIN
    SELECT RAISE(ABORT, 'signing keys are immutable');
END;

CREATE TRIGGER signing_keys_revoke_once
BEFORE UPDATE OF revoked_at ON signing_keys
WHEN OLD.revoked_at IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'a signing key is revoked once');
END;

CREATE TRIGGER signing_keys_no_delete
BEFORE DELETE ON signing_keys
BEGIN
    SELECT RAISE(ABORT, 'signing keys cannot be deleted');
END;

CREATE TRIGGER signatures_no_update
BEFORE UPDATE ON signatures
BEGIN
    SELECT RAISE(ABORT, 'signatures are immutable');
END;

CREATE TRIGGER signatures_no_delete
BEFORE DELETE ON signatures
BEGIN
    SELECT RAISE(ABORT, 'signatures cannot be deleted');
END;
