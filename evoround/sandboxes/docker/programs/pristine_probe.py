"""Describe the task image's own interpreter (run as ``python3 -I -c <this file's text>``
in a throw-away container, never imported; see ``evoround/sandboxes/docker/_pristine.py``).

Prints one JSON line: the interpreter's real path, its loader and library folders (from
``ldd``), where ``sh`` and ``timeout`` are, and its ``sys.path``.
"""

import json
import os
import shutil
import subprocess
import sys

py = os.path.realpath(sys.executable)
out = subprocess.run(["ldd", py], capture_output=True, text=True).stdout
loader, libdirs = None, []
for line in out.splitlines():
    parts = line.split()
    if "=>" in parts:
        i = parts.index("=>") + 1
        if i < len(parts) and parts[i].startswith("/"):
            libdirs.append(os.path.dirname(os.path.realpath(parts[i])))
    elif parts and parts[0].startswith("/"):
        loader = os.path.realpath(parts[0])


def which(n: str) -> str:
    return os.path.realpath(shutil.which(n) or "/nonexistent/" + n)


print(
    json.dumps(
        {
            "python": py,
            "loader": loader,
            "libdirs": sorted(set(libdirs)),
            "sh": which("sh"),
            "timeout": which("timeout"),
            "sys_path": sys.path,
        }
    )
)
