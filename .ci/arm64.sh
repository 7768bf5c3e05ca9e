#!/usr/bin/env bash
# arm64 under emulation: vets the NEON assembly for GOARCH=arm64 (with and
# without the purego tag, which forces the pure-Go twins), then builds the
# GOARCH=arm64 test binaries of the kernel packages and of their main users
# and runs each under qemu-aarch64 (Debian's qemu-user-static), from its
# package directory as go test would, with -test.short. The NEON kernels are
# checked against their pure-Go twins inside those binaries. Times under
# emulation say nothing about speed on arm64 (docs/performance-arm64.md).
#
# Usage: .ci/arm64.sh [package...]   (default: the list below)
set -euo pipefail
cd "$(dirname "$0")/.."

qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)
if [ -z "$qemu" ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-user-static >/dev/null
  qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64)
fi

echo "go vet (GOARCH=arm64, NEON and purego)"
GOARCH=arm64 go vet ./tensor/internal/...
GOARCH=arm64 go vet -tags purego ./tensor/internal/...

# The kernel packages first (each NEON kernel against its twin), then the
# suites that run the kernels through the tensor, autograd, nn and onnx APIs.
pkgs=("$@")
if [ ${#pkgs[@]} -eq 0 ]; then
  pkgs=(tensor/internal/vec tensor/internal/gemm tensor/internal/cpu tensor autograd nn onnx)
fi

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
failed=()
for pkg in "${pkgs[@]}"; do
  name=${pkg//\//_}
  GOARCH=arm64 CGO_ENABLED=0 go test -c -o "$bin/$name.test" "./$pkg"
  start=$(date +%s)
  if (cd "$pkg" && timeout 900 "$qemu" "$bin/$name.test" -test.short -test.timeout 14m >"$bin/$name.log" 2>&1); then
    echo "ok   $pkg ($(( $(date +%s) - start )) s under qemu)"
  else
    echo "FAIL $pkg ($(( $(date +%s) - start )) s under qemu)"
    grep -E -- '^(--- FAIL|panic:|FAIL)' "$bin/$name.log" | head -n 20 || true
    tail -n 30 "$bin/$name.log"
    failed+=("$pkg")
  fi
done
# EMBER_CPU=generic must move every NEON kernel family to its pure-Go twin
# (the children of TestEveryPath cannot be started under qemu-user, so the
# selection is checked here directly).
for pkg in tensor/internal/vec tensor/internal/gemm tensor/internal/cpu; do
  case " ${pkgs[*]} " in *" $pkg "*) ;; *) continue ;; esac
  name=${pkg//\//_}
  (cd "$pkg" && EMBER_CPU=generic timeout 300 "$qemu" "$bin/$name.test" -test.run '^TestPathInForce$' -test.v >"$bin/$name.generic.log" 2>&1) || true
  if grep -q -- '--- PASS: TestPathInForce' "$bin/$name.generic.log"; then
    echo "ok   $pkg follows EMBER_CPU=generic"
  else
    echo "FAIL $pkg does not follow EMBER_CPU=generic"
    tail -n 20 "$bin/$name.generic.log"
    failed+=("$pkg (EMBER_CPU=generic)")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "arm64 tests failed under qemu: ${failed[*]}"
  exit 1
fi
