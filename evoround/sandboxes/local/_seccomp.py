"""A seccomp filter for local sandboxes: no kernel keyrings for sandboxed commands.

Kernel keyrings are kept per user id, not per namespace: a key a sandboxed command adds
to its user keyring (``@u``, ``@us``) or to the session keyring it inherited from the
engine (``@s``) outlives the command, its pid namespace and the job, and every later
command of the same user can read it. So the tested code, run by round 1's verifier (which
reads the hidden suite), could store that suite in a key and round 2's agent (or an agent
of a later attempt or job) read it back. Docker's default seccomp profile refuses these
calls; this filter does the same: ``add_key``, ``request_key`` and ``keyctl`` fail with
``EPERM``, every other call is untouched. One program (:func:`keyring_filter`), two ways in:
bubblewrap reads it from a descriptor (:func:`filter_fd`, ``--seccomp FD``); under
``unshare`` a small Python launcher installs it (:func:`launcher_argv`).
"""

from __future__ import annotations

import os
import struct
import sys

from evoround.programs import program_text

_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_EPERM = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
_X32 = 0x40000000
"""x86-64's x32 syscalls carry this bit; they are refused whole (nothing here uses x32)."""

KEYRING_CALLS = {
    0xC000003E: (248, 249, 250),  # x86-64: add_key, request_key, keyctl
    0x40000003: (286, 287, 288),  # i386 (a 32-bit program on an x86-64 host)
    0xC00000B7: (217, 218, 219),  # aarch64
    0x40000028: (309, 310, 311),  # arm (32-bit)
}
"""Audit architecture -> the keyring system calls' numbers there."""


def keyring_filter() -> bytes:
    """The classic BPF program (``struct sock_filter`` array, native byte order)."""
    prog: list[tuple[int, int, int, int]] = []
    denies: list[int] = []  # indexes of jumps whose true branch goes to the deny return
    for arch, calls in KEYRING_CALLS.items():
        prog.append((_LD_ABS, 0, 0, 4))  # seccomp_data.arch
        body: list[tuple[int, int, int, int]] = [(_LD_ABS, 0, 0, 0)]  # seccomp_data.nr
        if arch == 0xC000003E:
            body.append((_JSET, 0, 0, _X32))
        body += [(_JEQ, 0, 0, nr) for nr in calls]
        body.append((_RET, 0, 0, _ALLOW))
        prog.append((_JEQ, 0, len(body), arch))
        start = len(prog)
        prog += body
        denies += range(start + 1, start + len(body) - 1)
    prog.append((_RET, 0, 0, _ALLOW))  # another architecture: nothing to refuse
    deny = len(prog)
    prog.append((_RET, 0, 0, _EPERM))
    for i in denies:
        code, _, jf, k = prog[i]
        prog[i] = (code, deny - i - 1, jf, k)
    return b"".join(struct.pack("=HBBI", *ins) for ins in prog)


def filter_fd() -> int:
    """A readable descriptor holding :func:`keyring_filter` from its start (for
    ``bwrap --seccomp``, which reads it to the end); the caller closes it."""
    r, w = os.pipe()
    data = keyring_filter()
    try:
        os.write(w, data)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(w)
    return r


STARTED = b"filtered"
"""What the namespace script (``_isolation.NS_SCRIPT``) writes on the status descriptor
the launcher hands it, once the filter is on, the covers are up and the program to run
is there: without it nothing of the command ran."""

# Runs first in unshare's namespaces (as their pid 1, before the namespace script), then
# becomes that script: the filter and no_new_privs hold for it and for everything it runs.
# The status descriptor stays open for the script, as descriptor 3, which the script closes
# before the command.
# -I -S: no workspace module (a planted ctypes.py), no site-packages. What Python changes
# at start is put back before exec: SIGPIPE and SIGXFSZ ignored (so `yes | head` would
# complain), LC_CTYPE added when the locale is C (the environment from /proc/self/environ,
# which is the block exec received). Failure: exit 125 with a line on stderr, nothing run.
_LAUNCH = program_text("evoround.sandboxes.local", "seccomp_launch.py")


def launcher_argv(status_fd: int) -> list[str]:
    """The words that put :func:`keyring_filter` (and ``no_new_privs``, as bubblewrap
    sets) on the command that follows them; ``status_fd`` (inherited, passed on to the namespace
    script, which closes it before the command runs) hears :data:`STARTED` once the
    filter is on and the command can start: without it the command never
    ran, and the sandbox says so as an error of the harness (as for bubblewrap)."""
    python = sys.executable or "python3"
    code = _LAUNCH
    return [python, "-I", "-S", "-c", code, keyring_filter().hex(), str(status_fd)]
