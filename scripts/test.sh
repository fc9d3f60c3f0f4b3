#!/usr/bin/env bash
# The full test suite, as CI runs it: install what the tests need (each step idempotent,
# skipped when already done), then run pytest. Extra arguments go to pytest, e.g.
#   scripts/test.sh                      # everything (CI), Docker included
#   scripts/test.sh -m "not slow"        # the fast tier while developing
#   scripts/test.sh tests/cli            # one folder
# .ci/run calls this script, so the README's command and CI cannot drift apart.
#
# Needs: Python >= 3.11 with pip, Debian's apt (root, or sudo), and a running Docker engine.
# Without Docker the Docker tests skip, and the run ends with a summary of what was skipped
# for a missing tool (in CI, CI=true, they fail instead).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '== %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    say "not root and no sudo: cannot run: $*"; return 1; fi
}

# System packages: debootstrap builds the offline base image (and Harbor's interpreter),
# chromium renders report.html (chromium-driver lets Selenium drive it for the viewer's
# tests), tmux serves harbor:terminus-2 in the local sandbox,
# bubblewrap confines the local sandbox.
APT_PACKAGES=(debootstrap chromium chromium-driver tmux bubblewrap)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  say "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The package and its test tools. Skipped when this checkout's evoround and pytest-xdist are
# importable already (a developer's editable install, or PYTHONPATH); CI always installs.
installed() {
  python3 - <<'EOF' 2>/dev/null
import pathlib, sys
import evoround, xdist  # noqa: F401
sys.exit(0 if pathlib.Path(evoround.__file__).resolve().is_relative_to(pathlib.Path.cwd().resolve()) else 1)
EOF
}
ci() { case "${CI:-}" in 1 | true | yes) return 0 ;; *) return 1 ;; esac; }
if ci || ! installed; then
  say "pip install -e '.[dev]'"
  python3 -m pip install --quiet --upgrade pip
  python3 -m pip install --quiet -e '.[dev]'
fi

# Docker-side tools: the offline base image (debootstrap + docker import), the LiteLLM proxy
# of --proxy in its own venv (so the tests use loopback only), and Harbor's own interpreter
# for --agent harbor:NAME (a debootstrapped Debian trixie with Python 3.13 and the pinned
# harbor; a few minutes, once). Each is idempotent.
# A Docker engine that is installed but not running (a machine whose daemon was stopped) is
# started here, and waited for, so a Docker test never fails for a daemon nobody started.
if ! docker info >/dev/null 2>&1 && command -v dockerd >/dev/null; then
  say "starting the Docker engine"
  as_root service docker start >/dev/null 2>&1 || (as_root setsid dockerd >/tmp/dockerd.log 2>&1 </dev/null &)
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
fi
if ci || docker info >/dev/null 2>&1; then
  python3 -m evoround.cli images bootstrap
else
  say "no Docker engine: the Docker tests will skip (the run's summary lists them)"
fi
python3 -m evoround.cli install-proxy
if [ "$(id -u)" -eq 0 ] || ci; then
  python3 -m evoround.cli install-harbor
else
  say "not root: skipping evoround install-harbor (the Harbor tests will skip)"
fi

# The suite: two workers, one file each, the longest files first (LONGEST_FIRST in
# tests/conftest.py; xdist would order files by their number of tests); the 30 slowest
# tests at the end.
exec python3 -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=30 "$@"
