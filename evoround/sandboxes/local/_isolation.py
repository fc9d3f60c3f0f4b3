"""How a local sandbox isolates the commands it runs: bubblewrap, unshare, or nothing.

``EVOROUND_LOCAL_ISOLATION`` picks one (``auto``: bubblewrap where ``bwrap`` works, else
``unshare`` where namespaces work, else none, with a warning). Both mechanisms give each
command its own pid namespace (every process it leaves, ``setsid`` and double forks
included, dies with it) and its own network namespace unless the task allows network.

- **bwrap** builds the command's view of the filesystem from scratch: the host's system
  folders (:data:`SYSTEM_DIRS`) read-only, every other top-level folder (``/home``,
  ``/root``, ``/srv``, ``/mnt``, a ``/work`` or ``/data``) empty except for the folders a
  command needs from there (the engine's Python, ``PATH`` entries, the program it runs,
  ``EVOROUND_LOCAL_SHOW``), a private ``/dev`` and ``/proc``, the sandbox's own folder as
  the only writable place and as ``/tmp`` (so the host's ``/tmp`` with every other
  sandbox and every verifier clone is not there at all), the hidden paths (task folders,
  snapshot store, ``EVOROUND_HOME``, the job folder) covered by empty read-only mounts;
  the Docker socket and the engines' storage (image layers, container mounts) are left
  out of the view.
- **unshare** (util-linux) runs the older script below: the hidden paths are covered, the
  rest of the host stays writable with the user's rights.

Under both, the seccomp filter of ``_seccomp`` refuses the kernel keyring calls.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from evoround.sandboxes.common import SandboxError
from evoround.sandboxes.local._seccomp import STARTED

MECHANISMS = ("bwrap", "unshare", "none")

# Runs as the namespace's first process (after the seccomp launcher, which hands it the
# status descriptor): carries out the steps :func:`ns_steps` planned, three words each
# (step, descriptor, path): "hold" opens a folder before the covers hide it, "cover" puts
# an empty tmpfs over a hidden path, "bind"/"robind" put a held folder back (the
# sandbox's own root, writable; the engine's Python where a cover hid it, read-only),
# "ro" makes a cover read-only. Then, only if the program to run is there to be run, it
# writes STARTED on the status descriptor (the harness's proof that the set-up and the
# program are fine: a command that cannot even start is the harness's error, and no
# command of the agent ever holds that descriptor) and becomes the command without any
# capability (as root it could otherwise umount the covers); "keep" (the sandbox's
# command runner, ``_runner``, which drops them for each command itself) keeps them.
NS_SCRIPT = r"""status="$1"; caps="$2"; shift 2
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  op="$1"; fd="$2"; p="$3"; shift 3
  case "$op" in
    hold) eval "exec $fd<\"\$p\"" || exit 125 ;;
    cover) if [ -d "$p" ]; then
             mount -t tmpfs -o size=1m,mode=0755 evoround-hidden "$p" || exit 125
           fi ;;
    bind) mkdir -p "$p" && mount --no-canonicalize --bind "/proc/self/fd/$fd" "$p" || exit 125
          eval "exec $fd<&-" ;;
    robind) mkdir -p "$p" && mount --no-canonicalize --bind "/proc/self/fd/$fd" "$p" || exit 125
            mount -o remount,bind,ro "$p" || exit 125
            eval "exec $fd<&-" ;;
    ro) mount -o remount,ro evoround-hidden "$p" 2>/dev/null ;;
  esac
done
shift
case "$1" in
  */*) [ -f "$1" ] && [ -x "$1" ] ;;
  *) command -v "$1" >/dev/null 2>&1 ;;
esac || {
  echo "evoround-ns: cannot execute $1: not found in the sandbox's view" >&2
  exit 127
}
printf STARTED >&"$status"
eval "exec $status>&-"
if [ "$caps" = drop ] && [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  exec setpriv --bounding-set=-all --inh-caps=-all -- "$@"
fi
exec "$@"
"""

_PROBES: dict[str, bool] = {}


def _probe(name: str, argv: list[str], tries: int = 3) -> bool:
    """Whether ``argv`` runs and exits 0 here (asked once per process).

    A failure is retried: on a loaded machine one probe can fail (a fork refused for a
    moment, a slow start), and a wrong "no" would silently downgrade ``auto`` from
    bubblewrap to unshare (the host's ``/tmp`` visible) or fail a ``bwrap`` job."""
    if name not in _PROBES:
        ok = False
        for attempt in range(tries):
            try:
                res = subprocess.run(argv, capture_output=True, timeout=20)
                ok = res.returncode == 0
            except (OSError, subprocess.SubprocessError):
                ok = False
            if ok:
                break
            time.sleep(0.5 * (attempt + 1))
        _PROBES[name] = ok
    return _PROBES[name]


@cache
def default_signals() -> tuple[str, ...]:
    """The prefix that starts a command with every signal at its default disposition
    (GNU ``env --default-signal``), or nothing where this ``env`` lacks the option.

    Why: a signal the engine's own parent ignored (``nohup``: SIGHUP; a script's ``&``:
    SIGINT and SIGQUIT) stays ignored across fork and exec, so without a reset the agent's
    commands and the verifier's tests would run with those signals ignored, and a test of
    Ctrl-C or of a hang-up would grade differently depending on how evoround was started.
    Docker starts every command from its runtime with the defaults; this makes the local
    backend do the same. The blocked-signal mask is inherited too and not reset here:
    nothing in evoround blocks signals, and shells do not block them for background jobs.
    The exec server's commands do not take this path: its init resets both (``_server``).
    Asked once per process (every per-command run starts with it)."""
    env = shutil.which("env")
    if env is None or not _probe("env --default-signal", [env, "--default-signal", "true"]):
        return ()
    return (env, "--default-signal")


def namespaces_available() -> bool:
    """Whether ``unshare`` can give a command its own pid + mount namespace here."""
    return _probe(
        "unshare",
        [
            "unshare",
            "--pid",
            "--fork",
            "--kill-child",
            "--mount",
            "--mount-proc",
            "--",
            "sh",
            "-c",
            "mount -t tmpfs x /mnt 2>/dev/null || mount -t tmpfs x /tmp; test -r /proc/1/status",
        ],
    )


def bwrap_available() -> bool:
    """Whether bubblewrap runs a command in new pid and network namespaces here."""
    if shutil.which("bwrap") is None:
        return False
    return _probe(
        "bwrap",
        [
            "bwrap",
            "--die-with-parent",
            "--unshare-pid",
            "--unshare-net",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--",
            "sh",
            "-c",
            "test -r /proc/1/status",
        ],
    )


def choose_isolation(requested: str) -> str:
    """The mechanism for ``EVOROUND_LOCAL_ISOLATION=requested``; a named one that does
    not work here is an error (one line), ``auto`` falls back with a warning."""
    if requested == "auto":
        if bwrap_available():
            return "bwrap"
        if namespaces_available():
            return "unshare"
        logging.getLogger(__name__).warning(
            "local sandbox: neither bubblewrap nor unshare works here: agent commands run as "
            "plain host processes (trusted agents only)"
        )
        return "none"
    if requested == "bwrap" and not bwrap_available():
        raise SandboxError(
            "EVOROUND_LOCAL_ISOLATION=bwrap: bubblewrap does not work here (install the "
            "Debian package bubblewrap, or allow unprivileged user namespaces)"
        )
    if requested == "unshare" and not namespaces_available():
        raise SandboxError(
            "EVOROUND_LOCAL_ISOLATION=unshare: cannot create pid + mount namespaces here"
        )
    if requested not in MECHANISMS:
        raise SandboxError(
            f"EVOROUND_LOCAL_ISOLATION={requested!r}: choose auto, bwrap, unshare or none"
        )
    return requested


def docker_sockets() -> list[str]:
    """Docker engine sockets on this host: a command that reaches one is root on the host."""
    cands = ["/var/run/docker.sock", "/run/docker.sock"]
    host = os.environ.get("DOCKER_HOST", "")
    if host.startswith("unix://"):
        cands.append(host[len("unix://") :])
    out: list[str] = []
    for c in cands:
        with contextlib.suppress(OSError):
            real = str(Path(c).resolve(strict=True))
            if real not in out:
                out.append(real)
    return out


UNSTABLE_TREES = ("/var/lib/docker", "/var/lib/containerd", "/run/docker", "/run/containerd")
"""Left out of a bubblewrap view: container engines mount and unmount under them all the
time (a recursive bind that meets a vanishing mount fails), and an agent has no business
reading image layers (a reference state may be one)."""
OWN_MOUNTS = ("/proc", "/dev", "/tmp", "/sys")
"""Top-level folders bubblewrap provides itself (``/sys`` read-only, as it is)."""
SYSTEM_DIRS = frozenset(
    {
        "bin",
        "sbin",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "usr",
        "etc",
        "opt",
        "var",
        "run",
        "nix",
        "snap",
        "gnu",
    }
)
"""Top-level folders a bubblewrap view shows. The others hold people's files and, often,
other copies of the very tasks being run (a benchmark's checkout, a test suite's fixtures,
the task folder a job copied from): hiding only the task folder the job was given would
leave those readable, hidden tests and reference solutions included."""


def _unstable_mounts() -> set[Path]:
    """Mount points to leave out: the trees above, FUSE and namespace-file mounts."""
    out = {Path(p) for p in UNSTABLE_TREES if os.path.lexists(p)}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields, fstype = left.split(), (right.split() or [""])[0]
            if len(fields) > 4 and (fstype.startswith("fuse") or fstype == "nsfs"):
                out.add(Path(fields[4].replace("\\040", " ")))
    return {p for p in out if not any(a in out for a in p.parents)}


def host_view() -> list[str]:
    """bubblewrap arguments that show the host's system folders read-only, minus
    :func:`_unstable_mounts`: each top-level system folder is bound whole, except the
    folders above a left-out mount, which are rebuilt entry by entry around it; other
    top-level folders are empty (see :func:`shown_dirs` for what comes back)."""
    skip = _unstable_mounts() | {Path(p) for p in docker_sockets()}  # root on the host
    above = {a for p in skip for a in p.parents}
    args: list[str] = []

    def mirror(folder: Path) -> None:
        try:
            children = sorted(folder.iterdir())
        except OSError:
            return
        for child in children:
            name = str(child)
            if child in skip or (folder == Path("/") and name in OWN_MOUNTS):
                continue
            if folder == Path("/") and child.name not in SYSTEM_DIRS and not child.is_symlink():
                if child.is_dir():
                    args.extend(["--dir", name])  # there, but empty
                continue
            if child.is_symlink():
                args.extend(["--symlink", os.readlink(child), name])
            elif child in above and child.is_dir():
                args.extend(["--dir", name])
                mirror(child)
            else:
                args.extend(["--ro-bind", name, name])

    mirror(Path("/"))
    return [*args, "--ro-bind", "/sys", "/sys"]


def _interpreter_dirs() -> list[Path]:
    """The engine's Python installation (``sys.prefix`` and its base, resolved)."""
    out: list[Path] = []
    for d in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))):
        with contextlib.suppress(OSError):
            p = Path(d).resolve()
            if p not in out and p != Path("/"):
                out.append(p)
    return out


def _in_view(path: Path) -> bool:
    return len(path.parts) < 2 or path.parts[1] in SYSTEM_DIRS


def shown_dirs(argv: list[str], search_path: str, hidden: tuple[Path, ...]) -> list[Path]:
    """Folders outside the system folders that a command needs, shown read-only: the
    engine's Python (the verifier runs it), the ``PATH`` entries and the folders of the
    program run (a tool installed under ``~/.local``), and ``EVOROUND_LOCAL_SHOW``.

    Only the engine's Python and the user's explicit ``EVOROUND_LOCAL_SHOW`` may be a
    top-level folder, a home folder or a folder above a hidden path; found folders never
    are (a ``PATH`` entry like ``/work`` would otherwise show every checkout under it)."""
    from evoround.settings import settings

    home = Path.home().resolve()
    found = _found_dirs(argv, search_path)
    chosen = [*map(str, _interpreter_dirs()), *(settings().local_show or "").split(os.pathsep)]
    out: list[Path] = []
    for d, explicit in [*((d, False) for d in found), *((Path(e), True) for e in chosen)]:
        with contextlib.suppress(OSError):
            r = d.resolve()
            if not explicit and _too_broad(r, home, hidden):
                continue
            if str(d).startswith("/") and r.is_dir() and r not in out and not _in_view(r):
                out.append(r)
    return out


def _found_dirs(argv: list[str], search_path: str) -> list[Path]:
    """The absolute ``PATH`` entries, and the folder of the program run (as named and
    with its links resolved)."""
    found = [Path(entry) for entry in search_path.split(os.pathsep) if entry.startswith("/")]
    if argv and argv[0].startswith("/"):
        found += [Path(argv[0]).parent, Path(os.path.realpath(argv[0])).parent]
    return found


def _too_broad(r: Path, home: Path, hidden: tuple[Path, ...]) -> bool:
    """Whether showing the (resolved) folder ``r`` would show too much: a top-level
    folder, the home folder or one above it, or a folder holding a hidden path."""
    if len(r.parts) < 3:
        return True
    # "r is p or holds p" as text (both absolute and normal: lexical, like Path.parents,
    # and a tenth of its cost: this runs for every PATH entry of every command)
    at, under = str(r), str(r) + "/"
    return any(p == at or p.startswith(under) for p in map(str, (home, *hidden)))


KEPT_CAPS = ["--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP"]
"""What the exec server keeps: a pid and mount namespace and a ``/proc`` per command
(``CAP_SYS_ADMIN``), and the right to empty a command's bounding set (``CAP_SETPCAP``)."""


def bwrap_argv(
    root: Path,
    hidden: tuple[Path, ...],
    argv: list[str],
    *,
    network: bool,
    cwd: str,
    pid_namespace: bool = True,
    info_fd: int | None = None,
    search_path: str = "",
    seccomp_fd: int | None = None,
    show: Sequence[Path] = (),
    keep_caps: bool = False,
) -> list[str]:
    """The bubblewrap command line that runs ``argv`` in sandbox ``root`` (see the module).

    ``show``: host folders bound read-only over everything else (the verifier's bytecode
    cache, which lives under a hidden path).

    ``pid_namespace=False`` is for agents whose processes must outlive a command (a tmux
    server): the filesystem view is the same, but what a command leaves keeps running
    (the scaffold stops its server when the attempt ends). ``keep_caps`` is for the
    sandbox's exec server (``_server``): it keeps :data:`KEPT_CAPS`, which no command
    keeps (the server drops them all before each command's exec).
    """
    tmp = root / "tmp"
    tmp.mkdir(exist_ok=True)
    out = _bwrap_namespaces(
        info_fd=info_fd, seccomp_fd=seccomp_fd, pid_namespace=pid_namespace, network=network
    )
    if keep_caps:  # the exec server's: to give each command its own namespaces
        out[out.index("ALL") + 1 : out.index("ALL") + 1] = KEPT_CAPS
    out += [*host_view(), "--dev", "/dev", "--proc", "/proc"]
    shown = shown_dirs(argv, search_path, hidden)
    for keep in shown:  # before the covers: a cover inside one of them stays
        out += ["--ro-bind", str(keep), str(keep)]
    covered = _covered(hidden)
    for c in covered:
        out += ["--tmpfs", c]
    out += ["--bind", str(tmp), "/tmp", "--bind", str(root), str(root)]
    kept = [k for k in _interpreter_dirs() if _under_tmp(k)]
    kept += [k for k in _hidden_interpreter_dirs(hidden) if k not in kept]
    for keep in kept:  # the engine's Python (the verifier runs it) where the view hides it
        out += ["--ro-bind", str(keep), str(keep)]
    for keep in show:
        out += ["--ro-bind", str(keep), str(keep)]
    recovered = _inside_any(hidden, kept)  # a task folder inside the venv stays hidden
    for c in recovered:
        out += ["--tmpfs", c]
    for c in [*covered, *recovered, "/"]:  # the covers, and the view's own root folder
        out += ["--remount-ro", c]
    return [*out, "--chdir", cwd, "--", *argv]


def _hidden_interpreter_dirs(hidden: tuple[Path, ...]) -> list[Path]:
    """The engine's Python folders that a cover over a hidden path would hide (a venv
    beside the task folder, under the task's parent), outermost only."""
    kept = [k for k in _interpreter_dirs() if any(h == k or h in k.parents for h in hidden)]
    return [k for k in kept if not any(o in k.parents for o in kept)]


def _inside_any(hidden: tuple[Path, ...], kept: list[Path]) -> list[str]:
    """The hidden paths strictly inside a folder put back into view: covered again."""
    return [str(h) for h in hidden if any(k in h.parents for k in kept)]


def _bwrap_namespaces(
    *, info_fd: int | None, seccomp_fd: int | None, pid_namespace: bool, network: bool
) -> list[str]:
    """bubblewrap itself and what it takes away: capabilities, IPC, keyrings (seccomp),
    and, as asked, the pid and network namespaces."""
    # --cap-drop ALL: run by root, bwrap keeps nearly every capability for the command,
    # which could then umount the covers over the hidden task folders, remount, mknod the
    # host's disk or chattr +i files the engine cannot remove
    out = ["bwrap", "--die-with-parent", "--unshare-ipc", "--cap-drop", "ALL"]
    if info_fd is not None:  # gets the command's exit code only if the command ran
        out += ["--json-status-fd", str(info_fd)]
    if seccomp_fd is not None:  # no kernel keyrings: they outlive every namespace
        out += ["--seccomp", str(seccomp_fd)]
    if pid_namespace:
        out += ["--unshare-pid", "--new-session"]
    if not network:
        out.append("--unshare-net")
    return out


def _under_tmp(p: Path) -> bool:
    return p == Path("/tmp") or Path("/tmp") in p.parents


def _covered(hidden: tuple[Path, ...]) -> list[str]:
    """The hidden paths that get an empty cover: not those under ``/tmp`` (the whole of
    it is replaced) nor those inside another covered folder (already out of sight)."""
    return [str(h) for h in hidden if not _under_tmp(h) and not any(o in h.parents for o in hidden)]


def ns_steps(root: Path, hidden: tuple[Path, ...], status_fd: int = -1) -> list[str]:
    """The namespace script's steps (see ``NS_SCRIPT``): hold the sandbox's root and the
    engine's Python folders a cover would hide, cover the hidden paths, put the root back
    (writable) and the Python folders (read-only), cover again the hidden paths inside
    those (a task folder inside the venv stays hidden), make the covers read-only.

    Why the Python folders: the verifier runs the engine's interpreter, and a venv beside
    the task folder lies under the task's parent, which is covered; without them the
    verifier could not start wherever the task folder sits next to the install. The
    script's descriptors are single digits, never ``status_fd``."""
    fds = [str(n) for n in range(9, 2, -1) if n != status_fd]
    kept = _hidden_interpreter_dirs(hidden)[: len(fds) - 1]
    steps = ["hold", fds[0], str(root)]
    for n, k in zip(fds[1:], kept, strict=False):
        steps += ["hold", n, str(k)]
    for h in hidden:
        steps += ["cover", "-", str(h)]
    steps += ["bind", fds[0], str(root)]
    recovered = _inside_any(hidden, kept)
    for n, k in zip(fds[1:], kept, strict=False):
        steps += ["robind", n, str(k)]
    for c in recovered:
        steps += ["cover", "-", c]
    for c in [*map(str, hidden), *recovered]:
        steps += ["ro", "-", c]
    return steps


def unshare_argv(
    root: Path,
    hidden: tuple[Path, ...],
    argv: list[str],
    *,
    network: bool,
    launcher: Sequence[str] = (),
    status_fd: int = -1,
    keep_caps: bool = False,
) -> list[str]:
    """The util-linux ``unshare`` command line that runs ``argv`` (see ``NS_SCRIPT``);
    ``launcher`` (the seccomp filter's, see ``_seccomp``) runs first inside the
    namespaces and becomes the script, which reports on ``status_fd``."""
    ns = ["unshare", "--pid", "--fork", "--kill-child", "--mount", "--mount-proc"]
    if not network:
        ns.append("--net")
    return [
        *ns,
        "--",
        *launcher,
        "sh",
        "-c",
        NS_SCRIPT.replace("STARTED", STARTED.decode()),
        "evoround-ns",
        "3" if launcher else str(status_fd),  # the launcher moves it to 3
        "keep" if keep_caps else "drop",
        *ns_steps(root, hidden, 3 if launcher else status_fd),
        "--",
        *argv,
    ]
