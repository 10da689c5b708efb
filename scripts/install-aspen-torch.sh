#!/usr/bin/env bash
# Builds Aspen (scripts/setup.sh, which installs the Debian packages: python3-torch, pybind11-dev)
# and installs the aspen_torch package with pip into the virtual environment VENV (made with
# Debian's python3 and --system-site-packages, so it sees python3-torch; default .venv-aspen).
# Usage: scripts/install-aspen-torch.sh [VENV]      then: VENV/bin/python -c "import aspen_torch"
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-.venv-aspen}
scripts/setup.sh build
scripts/install-packages.sh python3-venv python3-pip
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install --quiet --no-build-isolation --no-deps ./python
"$venv/bin/python" -c "import aspen_torch; print('aspen_torch installed in $venv')"
