#!/usr/bin/env bash
# Installs everything on a fresh machine and runs autosched's main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
python3 -m pip install -q --no-build-isolation .
python3 -m autosched.demo
