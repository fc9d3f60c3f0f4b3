"""Fixtures of the adversarial suite."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from evoround.snapshots import SnapshotStore
from tests.adversarial.leaks import job_containers

if TYPE_CHECKING:
    from evoround.sandboxes.docker import DockerProvider


@pytest.fixture(scope="module")
def docker_provider(
    docker_client, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DockerProvider]:  # noqa: ANN001
    """One Docker provider for a module's verifier-level cases (an attack graded by
    ``run_pytest`` in a container, where the defence lives, instead of a whole job each);
    closed at the end of the module, it must leave no container behind."""
    from evoround.sandboxes.docker import DockerProvider

    job = f"adv-{uuid.uuid4().hex[:8]}"
    provider = DockerProvider(SnapshotStore(tmp_path_factory.mktemp("store")), job=job)
    yield provider
    provider.close()
    assert job_containers(docker_client, job) == []
