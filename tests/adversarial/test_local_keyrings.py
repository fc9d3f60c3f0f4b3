"""No kernel keyrings in a hardened local sandbox, under bubblewrap and under unshare alike.

Keyrings are per user id, not per namespace: a key one command (the tested code in a
verifier, which reads the hidden suite) adds would be readable by every later command (the
next round's agent) and stay on the host. Under bubblewrap the seccomp filter goes in
through ``--seccomp``, under unshare through a small launcher; both must refuse the calls,
change nothing else about the command, and fail loudly when the filter cannot go on.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from evoround.sandboxes import LocalProvider
from evoround.sandboxes.local._isolation import bwrap_available, namespaces_available
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_task
from tests.helpers import COUNTER

ROOT = Path(__file__).resolve().parents[2]
MECHANISMS = ("bwrap", "unshare")


def _works(mechanism: str) -> bool:
    return bwrap_available() if mechanism == "bwrap" else namespaces_available()


@pytest.fixture(params=MECHANISMS)
def provider(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[LocalProvider]:
    if not _works(request.param) and os.environ.get("CI") != "true":
        pytest.skip(f"{request.param} does not work here")
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", request.param)
    p = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    assert p.isolation == request.param
    yield p
    p.close()


_KEY = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
add, ctl = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
name = sys.argv[2].encode()
if sys.argv[1] == "put":
    for ring in (-3, -4, -5):  # session, user, user-session keyring
        got = libc.syscall(add, b"user", name, b"hidden", 6, ctypes.c_int(ring))
        print("added" if got > 0 else "refused %d" % ctypes.get_errno())
else:
    for ring in (-3, -4, -5):
        kid = libc.syscall(ctl, 10, ctypes.c_int(ring), b"user", name, 0)
        print("found" if kid > 0 else "none")
        if kid > 0:
            libc.syscall(ctl, 21, kid)  # invalidate: leave the host's keyrings clean
"""


def test_kernel_keyrings_are_refused(provider: LocalProvider) -> None:
    """No command may add a key; a ``ctypes.py`` planted where the command starts does
    not take the launcher's place (it runs with ``-I``)."""
    name = f"evoround-rt-{uuid.uuid4().hex[:8]}"
    with provider.create(load_task(COUNTER), "t/k") as sb:
        sb.write_file("key.py", _KEY)
        sb.write_file("planted/ctypes.py", "import sys; sys.stderr.write('planted\\n')\n")
        put = sb.exec(["python3", "key.py", "put", name], timeout=30)
        get = sb.exec(["python3", "key.py", "get", name], timeout=30)  # and clean up
        assert put.stdout.split() and "added" not in put.stdout, (put.stdout, put.stderr)
        assert put.stdout.split()[1::2] == ["1"] * 3, put.stdout  # EPERM, as Docker's
        assert get.stdout.split() == ["none"] * 3, (get.stdout, get.stderr)
        honest = sb.exec("echo ok", timeout=30)  # the filter refuses nothing else
        assert honest.stdout == "ok\n"
        planted = sb.exec(["grep", "^Seccomp:", "/proc/self/status"], cwd="planted")
        assert planted.stdout.split() == ["Seccomp:", "2"] and not planted.stderr, planted


def test_the_command_gets_its_environment_and_signals_unchanged(
    provider: LocalProvider,
) -> None:
    """The launcher is Python, which at start ignores SIGPIPE and SIGXFSZ and may add
    ``LC_CTYPE`` (C locale coercion): none of that reaches the command."""
    with provider.create(load_task(COUNTER), "t/env") as sb:
        env = {"LANG": "C", "LC_ALL": "", "LC_CTYPE": "", "EVO_X": "ñ é"}
        res = sb.exec(["env", "-0"], env=env, timeout=30)
        got = dict(e.split("=", 1) for e in res.stdout.split("\0") if e)
        assert got.get("EVO_X") == "ñ é" and got.get("LANG") == "C", got
        assert got.get("LC_CTYPE") == "" and got.get("LC_ALL") == "", got
        assert not any(k.startswith(("EVOROUND_", "PYTHON")) for k in got), got
        status = sb.exec(["grep", "-E", "^(SigIgn|SigBlk|NoNewPrivs):", "/proc/self/status"])
        assert sorted(status.stdout.split()) == sorted(["SigIgn:", "0" * 16, "SigBlk:",
                                                        "0" * 16, "NoNewPrivs:", "1"]), status  # fmt: skip
        pipe = sb.exec('yes | head -n 1; echo "${PIPESTATUS[0]}"', timeout=30)
        assert (pipe.stdout, pipe.stderr) == ("y\n141\n", ""), pipe
        assert sb.exec("echo $$", timeout=30).stdout.strip() in {"1", "2"}  # pid namespace


# Refuses prctl(PR_SET_SECCOMP) and seccomp(2) with EINVAL, as a kernel without seccomp
# filters would: a program that runs a sandbox under it cannot put the keyring filter on.
_NO_FILTERS = """
import ctypes, os, struct, sys
arch, prctl_nr, seccomp_nr = {"x86_64": (0xC000003E, 157, 317),
                              "aarch64": (0xC00000B7, 167, 277)}[os.uname().machine]
ins = [(0x20, 0, 0, 4), (0x15, 0, 5, arch), (0x20, 0, 0, 0), (0x15, 4, 0, seccomp_nr),
       (0x15, 0, 2, prctl_nr), (0x20, 0, 0, 16), (0x15, 1, 0, 22),
       (0x06, 0, 0, 0x7FFF0000), (0x06, 0, 0, 0x00050000 | 22)]
prog = b"".join(struct.pack("=HBBI", *i) for i in ins)
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
libc, ul = ctypes.CDLL(None, use_errno=True), ctypes.c_ulong
assert libc.prctl(38, ul(1), ul(0), ul(0), ul(0)) == 0
assert libc.prctl(22, ul(2), ctypes.byref(Prog(len(ins), prog)), ul(0), ul(0)) == 0
from pathlib import Path
from evoround.sandboxes import LocalProvider, SandboxError
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_task
tmp = Path(sys.argv[1])
p = LocalProvider(SnapshotStore(tmp / "store"), tmp / "sb")
with p.create(load_task(Path(sys.argv[2])), "t/nofilter") as sb:
    try:
        res = sb.exec("echo ran > ran.txt", timeout=30)
        print("RESULT", res.exit_code, res.stderr)
    except SandboxError as e:
        print("ERROR", e)
    print("RAN" if (Path(sb.workdir) / "ran.txt").exists() else "NOT RUN")
"""


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_filter_that_cannot_go_on_is_the_harness_error(tmp_path: Path, mechanism: str) -> None:
    """Where the filter cannot be installed the command does not run unfiltered: the exec
    is a :class:`SandboxError` naming the cause (an infra error of the round), the same
    under unshare as under bubblewrap."""
    if not _works(mechanism) and os.environ.get("CI") != "true":
        pytest.skip(f"{mechanism} does not work here")
    if os.uname().machine not in ("x86_64", "aarch64"):
        pytest.skip("the test's own filter knows x86-64 and aarch64 only")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVOROUND_LOCAL_ISOLATION": mechanism}
    out = subprocess.run([sys.executable, "-c", _NO_FILTERS, str(tmp_path), str(COUNTER)],
                         capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[-1] == "NOT RUN", out.stdout
    assert lines[0].startswith("ERROR") and "could not start the command" in lines[0], lines
    if mechanism == "unshare":
        assert "cannot install the keyring filter" in lines[0], lines[0]


def test_the_filter_program_is_the_same_for_both(tmp_path: Path) -> None:
    """One program, two ways in: what the unshare launcher installs is what bubblewrap
    reads (a change to the filter cannot miss one of them)."""
    from evoround.sandboxes.local._seccomp import filter_fd, keyring_filter, launcher_argv

    fd = filter_fd()
    try:
        via_bwrap = os.read(fd, 1 << 16)
    finally:
        os.close(fd)
    argv = launcher_argv(99)
    assert bytes.fromhex(argv[-2]) == via_bwrap == keyring_filter()
    assert len(via_bwrap) % struct.calcsize("=HBBI") == 0
    assert argv[1:3] == ["-I", "-S"]  # no workspace module, no site-packages
