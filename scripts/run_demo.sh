#!/usr/bin/env bash
# Installs everything on a fresh machine and runs autosched's main job: tune ResNet-18 within a time budget,
# build it, check and time it beside onnxruntime and PyTorch. Extra arguments go to the demo
# (python -m autosched.demo --help), e.g. --time-budget 10m.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
python3 -m pip install -q --no-build-isolation .
# OpenBLAS misreads AVX-512 CPUs under some hypervisors; name the core type so
# the figures of the peers that use it are fair.
if grep -q avx512f /proc/cpuinfo 2>/dev/null; then export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-SkylakeX}"; fi
python3 -m autosched.demo "$@"
