#!/usr/bin/env bash
# Set up everything SREGym needs on a fresh Debian/Ubuntu machine, idempotently:
#   1. system servers the embedded cluster runs as pods (PostgreSQL, memcached, Redis, Prometheus...)
#      — only when we can install them (root + apt); otherwise say what is missing;
#   2. a virtualenv (.venv, or $SREGYM_VENV) with the core and every plugin installed editable.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# mariadb-server: TrainTicket's MySQL-compatible datastore (the embedded cluster maps mariadb:* images to it)
# nginx: the Social Network front (nginx-thrift runs Debian's nginx as a pod process)
# chromium: only for tests (the HTML report is checked in headless Chromium; those tests skip without it)
APT_PACKAGES=(postgresql mariadb-server memcached redis-server nginx prometheus stress-ng bubblewrap dnsmasq-base gcc libc6-dev chromium)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing system packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    # policy-rc.d keeps Debian from starting system-wide services we never use
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
    rm -f /usr/sbin/policy-rc.d
  else
    echo "setup: not root or no apt-get; these system packages are missing: ${missing[*]}" >&2
    echo "setup: tests that need them will be skipped" >&2
  fi
fi

venv_dir=${SREGYM_VENV:-$root/.venv}
python=${PYTHON:-python3}
if [ ! -x "$venv_dir/bin/python" ]; then
  "$python" -m venv "$venv_dir"
  "$venv_dir/bin/python" -m pip install -q --disable-pip-version-check -U pip
fi
"$venv_dir/bin/python" tools/dev_install.py --venv "$venv_dir"
# Editable installs import from this checkout, whose bytecode pip never compiles; where the shell
# sets PYTHONDONTWRITEBYTECODE (as CI machines do) every process - the CLI, each pod of an app -
# would compile our sources again (about 0.5 s of CPU a start). Compiled once here; Python checks
# each .pyc against its source, so a stale one is never used.
"$venv_dir/bin/python" -m compileall -q -j 0 sregym sregym_core plugins apps faults agents libs >/dev/null || true
echo "setup: done ($venv_dir)"
