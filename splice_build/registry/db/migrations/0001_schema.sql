-- Tables of the registry metadata store (docs/compatibility.md#registry-api).
CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    github_login TEXT
);

CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    token_hash TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at TEXT,
    scope_namespaces TEXT,
    expires_at TEXT,
    can_manage INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX tokens_user ON tokens(user_id);

CREATE TABLE namespaces (
    name TEXT PRIMARY KEY,
    owner_id INTEGER REFERENCES users(id),
    reserved INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);

CREATE TABLE namespace_maintainers (
    namespace TEXT NOT NULL REFERENCES namespaces(name),
    user_id INTEGER NOT NULL REFERENCES users(id),
    added_at TEXT NOT NULL,
    PRIMARY KEY (namespace, user_id)
);

CREATE TABLE rate_limits (
    key TEXT NOT NULL,
    window_start INTEGER NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (key, window_start)
);

CREATE TABLE packages (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL REFERENCES namespaces(name),
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    latest_version TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'skill',
    hidden INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE versions (
    package_id TEXT NOT NULL REFERENCES packages(id),
    version TEXT NOT NULL,
    manifest TEXT NOT NULL,
    integrity TEXT NOT NULL,
    size INTEGER NOT NULL,
    artifact_key TEXT NOT NULL UNIQUE,
    published_by TEXT NOT NULL,
    published_at TEXT NOT NULL,
    artifact_backend TEXT NOT NULL,
    artifact_url TEXT,
    provenance TEXT,
    PRIMARY KEY (package_id, version)
);

CREATE TABLE signing_keys (
    key_id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL REFERENCES namespaces(name),
    public_key TEXT NOT NULL,
    added_by TEXT NOT NULL,
    added_at TEXT NOT NULL,
    revoked_at TEXT
);

CREATE TABLE signatures (
    package_id TEXT NOT NULL,
    version TEXT NOT NULL,
    key_id TEXT NOT NULL REFERENCES signing_keys(key_id),
    signature TEXT NOT NULL,
    signed_by TEXT NOT NULL,
    signed_at TEXT NOT NULL,
    PRIMARY KEY (package_id, version, key_id),
    FOREIGN KEY (package_id, version) REFERENCES versions(package_id, version)
);
