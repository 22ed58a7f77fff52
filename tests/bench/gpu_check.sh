#!/usr/bin/env bash
# The one prepared script for a lent GPU machine (minutes are scarce there): configure with CUDA for the
# local GPU's architecture only, build the engine and the checker, compare every CUDA kernel with its CPU
# twin, and print cuBLAS/NCCL figures. Usage: bash tests/bench/gpu_check.sh
set -euo pipefail
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
cmake -S . -B build-gpu -G Ninja -DTRAINDECK_CUDA=ON -DTRAINDECK_BUILD_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES="${arch:-90}" >/dev/null
cmake --build build-gpu --target traindeck-cuda-check traindeck-train -j"$(nproc)"
./build-gpu/backend/engine/cuda/traindeck-cuda-check
