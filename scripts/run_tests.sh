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
# The installed package is what gets imported: the sources under python/ are not on the path.
# A test that hangs fails after 10 minutes with every thread's stack printed.
python3 -m pytest "$(pwd)/tests/python" -q -p no:cacheprovider --rootdir "$(pwd)" \
  --timeout=600 --timeout-method=thread "$@"
