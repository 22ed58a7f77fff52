#!/usr/bin/env bash
# Installs every Debian package that TrainDeck's build, the app and its tests need.
# Idempotent: re-running only installs what is missing. Needs root (or sudo).
#   --tests   also the test-side tools from npm: onnxruntime-node (runs the exported ONNX models), into tests/tools
set -euo pipefail

with_tests=0
for arg in "$@"; do
  case "$arg" in
    --tests) with_tests=1 ;;
    *) echo "install-deps: unknown option $arg (known: --tests)" >&2; exit 2 ;;
  esac
done

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git libgtest-dev
  # engine (convolutions: oneDNN, whose CMake config also wants OpenCL's headers and loader; image folders: libpng, libjpeg-turbo, and stb_image_resize's header)
  libopenblas-dev libdnnl-dev ocl-icd-opencl-dev zlib1g-dev libpng-dev libturbojpeg0-dev libstb-dev
  # worker, client, catalog
  nlohmann-json3-dev libsimdjson-dev libcpp-httplib-dev libcurl4-openssl-dev libssl-dev libsqlite3-dev
  # console
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libqt6sql6-sqlite qt6-tools-dev qtkeychain-qt6-dev libgl-dev
  # export
  libonnx-dev libprotobuf-dev protobuf-compiler
  # data shipped by Debian: the demo job and the tests train on it
  dataset-fashion-mnist
  # peer benchmark and user-script jobs (Debian's PyTorch lives in /usr/bin/python3)
  python3 python3-torch python3-torchvision python3-optuna python3-numpy
  # GUI tests and screenshots
  xvfb xauth imagemagick
  # tests: certificates for the TLS tests, pkill for the Slurm set-up's stray slurmstepd
  openssl procps curl
)
# With --tests: a real single-node Slurm for the Slurm executor's tests (installer/slurm-single-node.sh starts it),
# clang with libFuzzer's runtime (packaged apart from clang) for the fuzz tests (tests/fuzz), and clang-format and
# clang-tidy for the style checks (tests/style; git for the lines a change touched), and lintian and
# desktop-file-utils for the packages' check (tests/package), sqlite3, the peer of the CLI's ls benchmark, and
# OpenSSH's server and client: the SSH host's test starts an sshd of its own on a loopback port.
test_packages=(slurmctld slurmd slurm-client slurmrestd munge slurm-wlm-jwt-plugin clang libclang-rt-14-dev
  clang-format-14 clang-tidy-14 git poppler-utils lintian desktop-file-utils appstream sqlite3 openssh-server
  openssh-client)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if [ "$with_tests" -eq 1 ]; then
  packages+=("${test_packages[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "$with_tests" -eq 1 ] && ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "install-deps: done"
fi

if [ "$with_tests" -eq 1 ]; then
  tools="$(cd "$(dirname "$0")/../tests/tools" && pwd)"
  if [ -f "$tools/node_modules/onnxruntime-node/package.json" ]; then
    echo "install-deps: onnxruntime-node present in tests/tools"
  else
    # --ignore-scripts: the package's postinstall only fetches an optional CUDA provider; the CPU runtime is in
    # the package itself (see ../shared/notes/PEERS.md).
    echo "install-deps: installing onnxruntime-node into tests/tools"
    (cd "$tools" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  fi
fi
