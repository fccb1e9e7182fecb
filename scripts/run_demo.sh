#!/usr/bin/env bash
# Installs everything on a fresh machine and runs autosched's main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
python3 -m pip install -q --no-build-isolation .
# OpenBLAS misreads AVX-512 CPUs under some hypervisors; name the core type so
# the numpy figures the demo prints next to ours are fair.
if grep -q avx512f /proc/cpuinfo 2>/dev/null; then export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-SkylakeX}"; fi
python3 -m autosched.demo
