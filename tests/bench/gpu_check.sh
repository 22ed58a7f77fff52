#!/usr/bin/env bash
# The one prepared script for a lent GPU machine (minutes are scarce there): configure with CUDA for the
# local GPU's architecture only, build the engine and the checker, compare every CUDA kernel with its CPU
# twin, and print cuBLAS/NCCL figures. Usage: bash tests/bench/gpu_check.sh
set -euo pipefail
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
cmake -S . -B build-gpu -G Ninja -DTRAINDECK_CUDA=ON -DTRAINDECK_BUILD_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES="${arch:-90}" >/dev/null
cmake --build build-gpu --target traindeck-cuda-check traindeck-train -j"$(nproc)"
# Kernels, cuBLAS/NCCL, and the GPU training path against the CPU engine (weights and losses after 200 steps).
./build-gpu/backend/engine/cuda/traindeck-cuda-check || true
# The built-in trainer end to end on the GPU, against the CPU on the same spec (5 epochs of the Fashion MLP):
# samples/s from each run's "finished" record, and the test accuracy of both.
spec=resources/examples/fashion-mlp.json
for run in "cpu fp32" "cuda fp32" "cuda bf16"; do
  set -- $run
  rm -rf "/tmp/gpu-check-$1-$2"
  ./build-gpu/app/traindeck-train "$spec" --device "$1" --precision "$2" --checkpoint-dir "/tmp/gpu-check-$1-$2" \
    | grep -E '"finished"|"split":"test"|training on' | sed "s/^/[$1 $2] /" | cut -c1-220
done
# The PyTorch peer on the same model where this machine's PyTorch has CUDA (Debian's python3-torch does not).
/usr/bin/python3 -c 'import torch; print("torch", torch.__version__, "cuda" if torch.cuda.is_available() else "cpu only")' || true
if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ]; then
  WORLD_SIZE=2 ./build-gpu/app/traindeck-train "$spec" --device cuda --checkpoint-dir /tmp/gpu-check-dp \
    | grep -E '"finished"|"split":"test"' | sed 's/^/[2 GPUs] /' | cut -c1-220
fi
