"""Registry metadata stores: the ``MetadataStore`` protocol (``interface``) and its back ends,
SQLite (``sqlite``) and PostgreSQL (``postgres``)."""
