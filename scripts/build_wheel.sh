#!/usr/bin/env bash
# Builds the self-contained wheel into dist/ (AUTOSCHED_WHEEL_DIR picks another folder): LLVM 19 linked
# statically into libautosched_core.so (its X86, AArch64 and RISCV backends only), which the extension and
# the worker executable share; XGBoost taken from the xgboost-cpu package (a dependency of the wheel), the
# OpenCL ICD loader opened at run time where the machine has one. Installing the wheel needs no Debian
# package; building it needs the build machine's: install_deps.sh's, plus the static zstd library. Extra
# arguments go to `pip wheel`.
#
# The build runs in a venv of its own, build/wheel-env, which sees the machine's Python packages (setuptools,
# pybind11: the headers the source build in build/release uses, so ccache serves both builds the same
# objects) and adds the xgboost-cpu package, whose library the wheel links. Nothing is installed into the
# machine's Python but install_deps.sh's packages; CMake builds in build/wheel (setup.py).
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
ENV=build/wheel-env
if [ ! -x "$ENV/bin/python" ]; then
  python3 -m venv --system-site-packages "$ENV"
fi
"$ENV/bin/python" -m pip install -q --disable-pip-version-check "xgboost-cpu>=2.1,<3.3"  # setup.py XGBOOST_REQUIREMENT
# ccache (when installed) shares compiled objects with the source build in build/release.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(pwd)}"
OUT="${AUTOSCHED_WHEEL_DIR:-dist}"
AUTOSCHED_WHEEL=1 "$ENV/bin/python" -m pip wheel --no-build-isolation --no-deps -w "$OUT" "$@" .
ls -l "$OUT"/autosched-*.whl
