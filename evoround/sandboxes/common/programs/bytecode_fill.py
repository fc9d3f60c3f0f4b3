"""Fill a bytecode cache for this interpreter (run as ``python -I -B -c <this file's text>
TARGET [FROM=TO ...]``, never imported; see ``evoround/sandboxes/common/_bytecode.py``).

Runs a small pytest session in a temporary folder, then compiles every module it imported
from the interpreter's own installation into ``TARGET`` as ``pycache_prefix`` lays it out
(again under each ``TO`` for a source under ``FROM``), as checked-hash bytecode. Prints how
many files it compiled; exits 1 on a full disk (no cache rather than part of one).
"""

import errno
import importlib.util
import io
import marshal
import os
import py_compile
import sys
import sysconfig
import tempfile

target, maps = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
roots |= {os.path.realpath(p) for p in sysconfig.get_paths().values()}
prefixes = tuple(r.rstrip("/") + "/" for r in roots if r and r != "/")
# The runner's own imports: compiled into the cache with what the pytest session imports.
import json, secrets, signal, time, unittest  # noqa: E401, E402, F401, I001

with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "test_prepare.py"), "w") as f:
        f.write(
            "import unittest, pytest\n"
            "@pytest.mark.parametrize('x', [1, 2])\n"
            "def test_ok(x):\n    assert x == pytest.approx(x)\n"
            "    with pytest.raises(ValueError):\n        int('x')\n"
            "def test_fails():\n    assert [1] == [2]\n"
            "@pytest.fixture\ndef fx(tmp_path, monkeypatch, capsys):\n    return 1\n"
            "def test_skip(fx):\n    pytest.skip('s')\n"
            "class TestU(unittest.TestCase):\n    def test_u(self):\n"
            "        self.assertEqual(1, 1)\n"
        )
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    import pytest

    out, err = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = io.StringIO()
    try:
        pytest.main(
            [
                tmp,
                "-q",
                "-rfE",
                "-p",
                "no:cacheprovider",
                "--rootdir",
                tmp,
                "--junitxml",
                os.path.join(tmp, "report.xml"),
            ]
        )
    finally:
        sys.stdout, sys.stderr = out, err
    tmp_real = os.path.realpath(tmp) + "/"
sys.pycache_prefix = target  # cache_from_source lays paths out as the runner reads them
done = 0
for _name, mod in list(sys.modules.items()):
    src = getattr(getattr(mod, "__spec__", None), "origin", None)
    if not isinstance(src, str) or not src.endswith(".py") or not os.path.isabs(src):
        continue
    real = os.path.realpath(src)
    if real.startswith(tmp_real) or not real.startswith(prefixes):
        continue
    wheres = [src] + [to + src[len(fro) :] for fro, to in maps if src.startswith(fro)]
    for where in wheres:
        cfile = importlib.util.cache_from_source(where)
        try:
            py_compile.compile(
                src,
                cfile=cfile,
                dfile=where,
                doraise=True,
                invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
            )
        except OSError as e:  # a full disk: no cache at all rather than part of one
            if e.errno in (errno.ENOSPC, errno.EDQUOT):
                sys.exit(1)
            continue
        except Exception:
            continue
        with open(cfile, "rb") as f:  # a nearly full disk cuts a write short silently
            data = f.read()
        try:
            marshal.loads(data[16:])
        except Exception:
            sys.exit(1)  # a cut .pyc fails the import that reads it: never install one
        done += 1
print(done)
