#!/usr/bin/env bash
# Does all set-up (packages, including NumPy with OpenBLAS as the peer, configure, build), then
# runs every benchmark in bench/ and writes their output to bench-results/<date>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
peers=(python3-numpy libopenblas0)
missing=()
for p in "${peers[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi
scripts/setup.sh build
mkdir -p bench-results
out="bench-results/$(date +%Y-%m-%d).txt"
{
  echo "# $(date -u) on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  for b in build/bench/bench_*; do
    echo "## $(basename "$b")"
    "$b" 2>&1
  done
} | tee "$out"
echo "written to $out"
