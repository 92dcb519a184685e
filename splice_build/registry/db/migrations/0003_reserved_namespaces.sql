-- Namespaces nobody may claim by publishing (docs/compatibility.md#namespaces); an admin can assign them.
-- Both dialects run this file as written (there is no migrations_pg/ twin).
INSERT INTO namespaces (name, owner_id, reserved, created_at) VALUES
    ('splice', NULL, 1, '1970-01-01T00:00:00.000Z'),
    ('spliceloom', NULL, 1, '1970-01-01T00:00:00.000Z'),
    ('dim', NULL, 1, '1970-01-01T00:00:00.000Z'),
    ('official', NULL, 1, '1970-01-01T00:00:00.000Z'),
    ('admin', NULL, 1, '1970-01-01T00:00:00.000Z'),
    ('root', NULL, 1, '1970-01-01T00:00:00.000Z'),
    ('registry', NULL, 1, '1970-01-01T00:00:00.000Z'),
    ('support', NULL, 1, '1970-01-01T00:00:00.000Z'),
    ('security', NULL, 1, '1970-01-01T00:00:00.000Z'),
    ('staff', NULL, 1, '1970-01-01T00:00:00.000Z'),
    ('team', NULL, 1, '1970-01-01T00:00:00.000Z'),
    ('api', NULL, 1, '1970-01-01T00:00:00.000Z'),
    ('docs', NULL, 1, '1970-01-01T00:00:00.000Z'),
    ('www', NULL, 1, '1970-01-01T00:00:00.000Z')
ON CONFLICT (name) DO NOTHING;
