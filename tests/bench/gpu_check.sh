#!/usr/bin/env bash
# The one prepared script for a lent GPU machine (minutes are scarce there): configure with CUDA for the
# local GPU's architecture only, build the engine, the checker and the trainer, compare every CUDA kernel with its
# CPU twin, print cuBLAS/NCCL figures, and train the Fashion MLP on the CPU and on the GPU.
# Every part runs even when an earlier one failed, so one run gives all figures; each failure is recorded as a
# "GPU CHECK FAILED:" line and listed again at the end, and the script then exits 1 (0: every part passed).
# A cuda run of traindeck-train fails the check when it did not train on the GPU, did not finish, or its test
# accuracy differs from the CPU run's by more than the tolerance below.
# Usage: bash tests/bench/gpu_check.sh
set -uo pipefail

# The cuda runs start from the same initialisation and see the same data order as the CPU run; fp32 differs only
# in summation order, bf16 rounds gemm inputs to 8 bits of mantissa, and both compound over 5 epochs. Absolute
# difference of test accuracy (a fraction: 0.01 is one percentage point).
tolerance_fp32=0.01
tolerance_bf16=0.02

failures=()
fail() {
  failures+=("$1")
  echo "GPU CHECK FAILED: $1"
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || fail "nvidia-smi cannot query the GPU"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
if ! cmake -S . -B build-gpu -G Ninja -DTRAINDECK_CUDA=ON -DTRAINDECK_BUILD_TESTS=OFF \
    -DCMAKE_CUDA_ARCHITECTURES="${arch:-90}" >/dev/null ||
  ! cmake --build build-gpu --target traindeck-cuda-check traindeck-train -j"$(nproc)"; then
  fail "the CUDA build failed (output above); nothing else can run"
  exit 1
fi

# Kernels, cuBLAS/NCCL, and the GPU training path against the CPU engine (weights and losses); two ranks where
# two GPUs are visible. 77 means it saw no NVIDIA device node, which on this machine is itself a failure.
./build-gpu/backend/engine/cuda/traindeck-cuda-check
status=$?
case $status in
  0) ;;
  77) fail "traindeck-cuda-check found no NVIDIA device node (/dev/nvidiactl, /dev/nvidiaN): no GPU is reachable here" ;;
  *) fail "traindeck-cuda-check exited $status (its MISMATCH/FAILED lines are above)" ;;
esac

# The built-in trainer end to end, against the CPU on the same spec (5 epochs of the Fashion MLP): samples/s from
# each run's "finished" record, and the test accuracy of both.
spec=resources/examples/fashion-mlp.json
logs=/tmp/gpu-check-logs
rm -rf "$logs" && mkdir -p "$logs"

# train NAME [traindeck-train arguments...]: runs it with its metrics and stderr in $logs/NAME.{out,err}, prints
# the interesting lines, records a failed exit; sets $train_status.
train() {
  local name=$1
  shift
  rm -rf "/tmp/gpu-check-$name"
  ./build-gpu/app/traindeck-train "$spec" --checkpoint-dir "/tmp/gpu-check-$name" "$@" >"$logs/$name.out" 2>"$logs/$name.err"
  train_status=$?
  grep -hE '"finished"|"split":"test"|"event":"device"|"type":"error"' "$logs/$name.out" | sed "s/^/[$name] /" | cut -c1-240
  sed "s/^/[$name stderr] /" "$logs/$name.err" | tail -5 | cut -c1-300
  if [ "$train_status" -ne 0 ]; then
    fail "traindeck-train $name exited $train_status: $(tail -1 "$logs/$name.err" | cut -c1-300)"
  fi
}

test_accuracy() {
  grep -h '"split":"test"' "$logs/$1.out" | tail -1 | grep -o '"accuracy":[-0-9.eE+]*' | cut -d: -f2
}

# The trainer's own "device" event says where it trained: "training on <GPU name>, ..." or "training on CPU: why".
trained_on_gpu() {
  grep -h '"event":"device"' "$logs/$1.out" | grep -o '"message":"training on [^"]*"' | grep -qv 'training on CPU'
}

# compare_with_cpu NAME TOLERANCE: the run trained on the GPU, finished, and its test accuracy is within TOLERANCE
# of the CPU run's.
compare_with_cpu() {
  local name=$1 tolerance=$2 accuracy
  if ! trained_on_gpu "$name"; then
    fail "$name did not train on the GPU (its device events above say why)"
    return
  fi
  accuracy=$(test_accuracy "$name")
  if [ -z "$accuracy" ] || [ -z "$cpu_accuracy" ]; then
    fail "$name: no test accuracy to compare (gpu: '${accuracy}', cpu: '${cpu_accuracy}')"
    return
  fi
  if awk -v a="$accuracy" -v b="$cpu_accuracy" -v t="$tolerance" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; then
    echo "[$name] test accuracy $accuracy vs CPU $cpu_accuracy: within $tolerance"
  else
    fail "$name: test accuracy $accuracy differs from the CPU run's $cpu_accuracy by more than $tolerance"
  fi
}

train cpu-fp32 --device cpu
cpu_accuracy=$(test_accuracy cpu-fp32)
[ -n "$cpu_accuracy" ] || fail "the CPU run reported no test accuracy, so the cuda runs cannot be compared"
train cuda-fp32 --device cuda --precision fp32
compare_with_cpu cuda-fp32 "$tolerance_fp32"
train cuda-bf16 --device cuda --precision bf16
compare_with_cpu cuda-bf16 "$tolerance_bf16"

# The PyTorch peer on the same model where this machine's PyTorch has CUDA (Debian's python3-torch does not).
/usr/bin/python3 -c 'import torch; print("torch", torch.__version__, "cuda" if torch.cuda.is_available() else "cpu only")' || true

if [ "$gpus" -ge 2 ]; then
  # Data parallel on two GPUs against the same CPU run.
  WORLD_SIZE=2 train dp-2gpus --device cuda
  compare_with_cpu dp-2gpus "$tolerance_fp32"
  grep -q 'rank 0 of 2' "$logs/dp-2gpus.out" || fail "dp-2gpus: rank 0 does not say it trained as rank 0 of 2"

  # A rank that dies must end the run, not hang it: both ranks hold at step 20, rank 1 is killed, rank 0 goes on
  # to its next all-reduce and must exit 6 within a minute, saying which rank died.
  release=/tmp/gpu-check-release
  rm -rf "$release" /tmp/gpu-check-dp-kill
  WORLD_SIZE=2 ./build-gpu/app/traindeck-train "$spec" --device cuda --checkpoint-dir /tmp/gpu-check-dp-kill \
    --hold-at "20:$release" >"$logs/dp-kill.out" 2>"$logs/dp-kill.err" &
  rank0=$!
  for _ in $(seq 600); do
    grep -q '"event":"held"' "$logs/dp-kill.out" && break
    sleep 0.1
  done
  rank1=$(pgrep -P "$rank0" | head -1)
  if [ -z "$rank1" ]; then
    fail "dp-kill: rank 0 (pid $rank0) started no rank 1 process"
  else
    kill -9 "$rank1"
  fi
  touch "$release"
  for _ in $(seq 600); do
    kill -0 "$rank0" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$rank0" 2>/dev/null; then
    kill -9 "$rank0"
    wait "$rank0" 2>/dev/null
    fail "dp-kill: rank 0 still waited 60 s after rank 1 was killed (a hang)"
  else
    wait "$rank0"
    status=$?
    sed 's/^/[dp-kill stderr] /' "$logs/dp-kill.err" | tail -3 | cut -c1-300
    [ "$status" -eq 6 ] || fail "dp-kill: rank 0 exited $status after rank 1 was killed, not 6 (the GPU path failed)"
    grep -q 'rank 1' "$logs/dp-kill.err" || fail "dp-kill: rank 0's message does not name rank 1"
  fi
  rm -rf "$release"
else
  # One GPU: two ranks cannot run, and asking for them must say so (exit 2), not train on one.
  WORLD_SIZE=2 ./build-gpu/app/traindeck-train "$spec" --device cuda --checkpoint-dir /tmp/gpu-check-dp-1gpu \
    >"$logs/dp-1gpu.out" 2>"$logs/dp-1gpu.err"
  status=$?
  sed 's/^/[WORLD_SIZE=2 on 1 GPU] /' "$logs/dp-1gpu.err" | tail -2 | cut -c1-300
  [ "$status" -eq 2 ] || fail "WORLD_SIZE=2 on one GPU exited $status, not 2 (bad arguments)"
fi

if [ "${#failures[@]}" -gt 0 ]; then
  echo "gpu_check: ${#failures[@]} failure(s):"
  printf '  %s\n' "${failures[@]}"
  exit 1
fi
echo "gpu_check: all parts passed"
