"""Choosing the store back ends from the environment (``registry.storage``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.db.postgres import display_url
from splice_build.registry.storage import S3Location, StorageConfig
from testing.cli import run_splice


def test_default_is_the_data_directory() -> None:
    config = StorageConfig.from_env({})
    assert config == StorageConfig() and config.needs_data_dir


def test_postgres_and_s3_from_the_environment() -> None:
    config = StorageConfig.from_env(
        {
            "SPLICE_REGISTRY_DATABASE_URL": "postgresql://splice:secret@db:5432/reg",
            "SPLICE_REGISTRY_ARTIFACTS": "s3://artifacts/splice/prod/",
            "SPLICE_REGISTRY_S3_ENDPOINT": "https://s3.example.net",
        }
    )
    assert config.artifacts == S3Location("artifacts", "splice/prod")
    assert config.s3_endpoint == "https://s3.example.net"
    assert not config.needs_data_dir
    shown = config.describe(Path("/srv/data"))
    assert "secret" not in shown
    assert shown == (
        "metadata: postgresql://splice:***@db:5432/reg, artifacts: s3://artifacts/splice/prod"
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SPLICE_REGISTRY_DATABASE_URL", "mysql://db/reg"),
        ("SPLICE_REGISTRY_DATABASE_URL", "/srv/registry.db"),
        ("SPLICE_REGISTRY_ARTIFACTS", "https://bucket.example/x"),
        ("SPLICE_REGISTRY_ARTIFACTS", "s3:///no-bucket"),
        # urlsplit raises ValueError for these: INTERNAL_ERROR at `registry serve` before
        ("SPLICE_REGISTRY_DATABASE_URL", "postgresql://splice@[::1/splice"),
        ("SPLICE_REGISTRY_ARTIFACTS", "s3://[bucket"),
        ("SPLICE_REGISTRY_ARTIFACTS", "s3://a\u2100b/prefix"),  # NFKC makes ℀ "a/c"
    ],
)
def test_wrong_settings_are_invalid_config(name: str, value: str) -> None:
    with pytest.raises(RegistryError) as info:
        StorageConfig.from_env({name: value})
    assert info.value.code is ErrorCode.INVALID_CONFIG


def test_display_url_hides_only_the_password() -> None:
    assert display_url("postgresql://u:p%40ss@h/db") == "postgresql://u:***@h/db"
    assert display_url("postgresql://u@h/db") == "postgresql://u@h/db"


def test_unreachable_database_is_a_clear_error(tmp_path: Path) -> None:
    done = run_splice(
        "registry",
        "admin",
        "create-user",
        "alice",
        "--data",
        str(tmp_path / "data"),
        "--json",
        env={"SPLICE_REGISTRY_DATABASE_URL": "postgresql://u:hunter2@127.0.0.1:9/none"},
    )
    assert done.code == 1, done.stderr
    error = done.json()["error"]
    assert error["code"] == "STORAGE_UNAVAILABLE"
    assert "127.0.0.1:9" in error["message"] and "hunter2" not in done.stdout + done.stderr


def test_migrate_verb_needs_to(tmp_path: Path) -> None:
    done = run_splice("registry", "admin", "migrate", "--data", str(tmp_path))
    assert done.code == 2 and "--to" in done.stderr
