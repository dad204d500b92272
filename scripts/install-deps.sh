#!/usr/bin/env bash
# Installs the Debian 12 packages the build needs, and only those that are missing.
# Safe to run repeatedly; needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  g++ clang cmake ninja-build make pkg-config
  coinor-libclp-dev coinor-libcbc-dev libglpk-dev
  # The allocator of the gavel binary (optional: CMakeLists.txt, GAVEL_MIMALLOC).
  libmimalloc-dev
  nlohmann-json3-dev libcli11-dev libeigen3-dev
  libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libsqlite3-dev
  # SHA-256 of tokens and the CSPRNG for the credentials the runtime issues (libcrypto).
  libssl-dev
  # The HTTP server of the iterator endpoint, metrics and dashboard (src/gavel/rpc/http_server.h).
  libcpp-httplib-dev
  python3
  # Real training jobs: the PyTorch end-to-end test (runtime_torch_e2e_test, label slow) and
  # examples/training/ddp_train.py; python3-setuptools lets `pip install ./python` build the
  # iterator client without a download (in a virtual environment: python3-venv).
  python3-torch python3-setuptools python3-venv
  # `gavel profile` (python/gavel_profile.py): torchvision's ResNet-18 and ResNet-50.
  python3-torchvision
  # Tests only: ECOS itself (inside Debian's R package for it), the reference that
  # src/gavel/lp/ecos_lp_test.cc compares our ECOS-faithful LP solver against.
  r-cran-ecosolver
  # Tests only: `promtool check metrics` on the daemon's /metrics, headless Chromium loading
  # the dashboard, openssl making the TLS certificates (src/gavel/daemon/e2e_test.cc).
  prometheus chromium openssl
  # The `debug` preset (clang++ with ASan, UBSan, -Wthread-safety, and libFuzzer for the fuzz
  # targets built in it: fuzz/, scripts/fuzz-smoke.sh).
  clang libclang-rt-14-dev
  # The Slurm backend (docs/slurm.md): libslurm's C API to talk to slurmctld, and the loopback
  # cluster of scripts/slurm-dev-cluster.sh (munge, slurmctld, slurmd, the client commands)
  # that its tests and users start.
  libslurm-dev slurm-wlm slurmrestd munge
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
