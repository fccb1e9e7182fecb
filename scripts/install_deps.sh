#!/usr/bin/env bash
# Installs what autosched needs to build and test on a fresh Debian 12 machine:
# Debian's packages for the C++ dependencies, PyPI for the Python ones.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi

# ccache: setup.py compiles through it, so the wheel's build (scripts/build_wheel.sh) reuses the source
# build's objects. The cross compilers and qemu-user serve cross-compiled networks: `autosched compile
# --cross-compiler` links them, tests/python/test_cli_tvmc.py runs their kernels under qemu.
packages=(cmake ninja-build g++ ccache llvm-19-dev libxgboost-dev ocl-icd-opencl-dev opencl-headers
          pocl-opencl-icd clinfo nlohmann-json3-dev libgtest-dev clang-format
          gcc-aarch64-linux-gnu gcc-riscv64-linux-gnu qemu-user)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# onnx, onnxruntime and torch serve the network importers and their tests (tests/python/test_frontends.py);
# ray serves RayRunner (measuring on a Ray cluster; tests/python/test_ray_runner.py starts one on loopback):
# pinned, as Ray's defaults change between releases (2.60 turns token authentication on by itself: docs/ray.md);
# torch==2.13.0 is the CPU build this machine kind keeps on disk (another version would download a CUDA build);
# transformers builds tiny BERT / GPT-2 / T5 models for the importer tests (tests/python/test_transformers_import.py);
# onnxscript serves torch.onnx.export(..., dynamo=True) (tests/python/test_model_suite.py);
# torchao holds PyTorch's PT2E quantization flow (prepare_pt2e / convert_pt2e), which quantizes the models of
# tests/python/test_torch_quantized.py (docs/quantized.md).
# tqdm draws the progress bar, matplotlib the plots (autosched.plot); mypy checks the type hints
# (tests/python/test_typing.py); nbclient, nbformat and ipykernel run the tutorials (tests/python/test_docs.py).
python3 -m pip install -q --disable-pip-version-check "pybind11>=2.11" "numpy>=1.22" "ml_dtypes>=0.2" "pytest>=7" \
  pytest-timeout setuptools wheel \
  onnx onnxruntime "onnxscript==0.7.2" "torch==2.13.0" "transformers==5.25.0" "ray==2.60.0" "torchao==0.18.0" tqdm matplotlib \
  mypy nbclient nbformat ipykernel

# torchvision and timm serve the model suite (bench/bench_models.py, tests/python/test_model_suite.py). PyPI's
# torchvision for torch 2.13.0 is a CUDA build whose C++ ops do not load with the CPU torch, and whose import then
# fails; installed beside torch it would also break transformers' ONNX exports (they import torchvision). So both
# go, --no-deps (torch stays as it is), into a folder of their own that only the suite puts on sys.path, after
# declaring the ops torchvision registers fake kernels for (bench/_models.py). timm's other needs (pyyaml,
# huggingface_hub, safetensors) come with transformers.
VISION_PACKAGES="${AUTOSCHED_VISION_PACKAGES:-/opt/autosched-vision}"
if [ ! -d "$VISION_PACKAGES/timm" ] || [ ! -d "$VISION_PACKAGES/torchvision" ]; then
  $SUDO python3 -m pip install -q --disable-pip-version-check --no-deps --target "$VISION_PACKAGES" \
    "torchvision==0.28.0" "timm==1.0.31"
fi
