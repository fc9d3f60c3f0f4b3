"""Fixtures of the sandbox tests."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """A folder on tmpfs when there is one (a 20,000-deep tree is removed in about two
    seconds there; on a busy disk every rmdir can cost milliseconds), else ``tmp_path``."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        d = Path(tempfile.mkdtemp(prefix="evoround-test-", dir=shm))
        try:
            yield d
        finally:
            subprocess.run(["rm", "-rf", str(d)], check=False)
    else:
        yield tmp_path
