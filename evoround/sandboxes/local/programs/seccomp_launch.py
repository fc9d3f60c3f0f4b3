"""Put the keyring filter on, then become the command (run as ``python -I -S -c <this
file's text> FILTER_HEX STATUS_FD ARGV...``, never imported; see
``evoround/sandboxes/local/_seccomp.py``).

Runs first in unshare's namespaces (as their pid 1, before the namespace script): sets
no_new_privs and the seccomp filter, hands the status descriptor on as descriptor 3, puts
back what Python changed at start (SIGPIPE and SIGXFSZ, the environment from
/proc/self/environ) and execs. Failure: exit 125 (filter) or 127 (exec) with a line on
stderr, nothing run.
"""

import _signal
import ctypes
import os
import sys

prog, status = bytes.fromhex(sys.argv[1]), int(sys.argv[2])


class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


libc, ul = ctypes.CDLL(None, use_errno=True), ctypes.c_ulong
if libc.prctl(38, ul(1), ul(0), ul(0), ul(0)) or libc.prctl(
    22, ul(2), ctypes.byref(Prog(len(prog) // 8, prog)), ul(0), ul(0)
):
    sys.stderr.write(
        "evoround-seccomp: cannot install the keyring filter: prctl: "
        f"{os.strerror(ctypes.get_errno())}\n"
    )
    sys.exit(125)
if status != 3:  # the namespace script's status descriptor: a single digit for sh
    os.dup2(status, 3)
    os.close(status)
for sig in (_signal.SIGPIPE, _signal.SIGXFSZ):
    _signal.signal(sig, _signal.SIG_DFL)
try:
    with open("/proc/self/environ", "rb") as f:
        env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
except OSError:
    env = dict(os.environb)
try:
    os.execvpe(sys.argv[3], sys.argv[3:], env)
except OSError as e:
    sys.stderr.write(f"evoround-seccomp: {sys.argv[3]}: {e.strerror}\n")
    sys.exit(127)
