#!/usr/bin/env bash
# Builds the self-contained wheel into dist/: LLVM 19 linked statically, XGBoost taken from the
# xgboost-cpu package (a dependency of the wheel), the OpenCL ICD loader opened at run time where the
# machine has one. Installing the wheel needs no Debian package; building it needs the build
# machine's: install_deps.sh's, plus the static zstd library. Extra arguments go to `pip wheel`.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
bash scripts/install_deps.sh
for p in libzstd-dev zlib1g-dev; do
  if ! dpkg -s "$p" >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$p" >/dev/null
  fi
done
# ccache (when installed) shares compiled objects with the source build in build/release.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(pwd)}"
AUTOSCHED_WHEEL=1 python3 -m pip wheel --no-deps -w dist "$@" .
ls -l dist/autosched-*.whl
