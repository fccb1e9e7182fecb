#!/usr/bin/env bash
# Installs everything on a fresh machine and runs every test: C++ (GoogleTest)
# then Python (pytest). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
AUTOSCHED_BUILD_TESTS=1 python3 -m pip install -q --no-build-isolation .
echo "== C++ tests =="
build/release/autosched_tests --gtest_brief=1
echo "== Python tests =="
# Run from a neutral folder so the installed package, not the source tree, is imported.
python3 -m pytest "$(pwd)/tests/python" -q -p no:cacheprovider --rootdir "$(pwd)" "$@"
