"""Registry artifact stores: the ``BlobStore`` protocol (``interface``) and its back ends, the
file system (``filesystem``) and S3-compatible storage (``s3``)."""
