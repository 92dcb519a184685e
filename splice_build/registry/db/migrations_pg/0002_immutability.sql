-- Published versions are immutable, enforced by the database itself (docs/compatibility.md#registry-api), in
-- PL/pgSQL: the rules of migrations/0002_immutability.sql. As in SQLite, BEFORE UPDATE OF
-- fires when a listed column is assigned at all, even to its own value. The refusal is an
-- integrity_constraint_violation (SQLSTATE 23000), like SQLite's constraint error.
CREATE FUNCTION splice_refuse() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'integrity_constraint_violation';
END;
$$;

CREATE TRIGGER versions_identity_immutable
BEFORE UPDATE OF package_id, version, manifest, integrity, size, artifact_key, published_by, published_at
ON versions
FOR EACH ROW EXECUTE FUNCTION splice_refuse('published versions are immutable');

CREATE TRIGGER versions_no_delete
BEFORE DELETE ON versions
FOR EACH ROW EXECUTE FUNCTION splice_refuse('published versions cannot be deleted');

CREATE TRIGGER versions_no_truncate
BEFORE TRUNCATE ON versions
FOR EACH STATEMENT EXECUTE FUNCTION splice_refuse('published versions cannot be deleted');

CREATE TRIGGER versions_provenance_write_once
BEFORE UPDATE OF provenance ON versions
FOR EACH ROW WHEN (OLD.provenance IS NOT NULL)
EXECUTE FUNCTION splice_refuse('provenance is write-once');

CREATE TRIGGER packages_no_delete
BEFORE DELETE ON packages
FOR EACH ROW EXECUTE FUNCTION splice_refuse('packages cannot be deleted');

CREATE TRIGGER packages_no_truncate
BEFORE TRUNCATE ON packages
FOR EACH STATEMENT EXECUTE FUNCTION splice_refuse('packages cannot be deleted');

CREATE TRIGGER tokens_hash_immutable
BEFORE UPDATE OF id, user_id, token_hash, created_at ON tokens
FOR EACH ROW EXECUTE FUNCTION splice_refuse('token identity is immutable');

CREATE TRIGGER signing_keys_identity_immutable
BEFORE UPDATE OF key_id, namespace, public_key, added_by, added_at ON signing_keys
FOR EACH ROW EXECUTE FUNCTION splice_refuse('signing keys are immutable');

CREATE TRIGGER signing_keys_revoke_once
BEFORE UPDATE OF revoked_at ON signing_keys
FOR EACH ROW WHEN (OLD.revoked_at IS NOT NULL)
EXECUTE FUNCTION splice_refuse('a signing key is revoked once');

CREATE TRIGGER signing_keys_no_delete
BEFORE DELETE ON signing_keys
FOR EACH ROW EXECUTE FUNCTION splice_refuse('signing keys cannot be deleted');

CREATE TRIGGER signatures_no_update
BEFORE UPDATE ON signatures
FOR EACH ROW EXECUTE FUNCTION splice_refuse('signatures are immutable');

CREATE TRIGGER signatures_no_delete
BEFORE DELETE ON signatures
FOR EACH ROW EXECUTE FUNCTION splice_refuse('signatures cannot be deleted');
