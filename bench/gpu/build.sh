#!/bin/sh
# Builds, here (Go toolchain, no GPU needed), everything the GPU machine runs in one call:
# the test binaries of the packages with GPU tests, the `ember` binary, all with -tags cuda and
# CGO_ENABLED=0, plus the PyTorch twins of the benchmarks, the library-discovery script and
# run.sh. The result is the ignored folder gpu-bins/ at the repository root; carry it with the
# `run` tool and run `sh gpu-bins/run.sh` there (see bench/gpu/README.md). The binaries are
# gzipped (each embeds the PTX of every kernel; together they would take 40 MiB of the 64 MiB
# the run tool carries with the working tree, gzipped about 14): run.sh unpacks them.
#
# usage: sh bench/gpu/build.sh        (from anywhere inside the repository)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=gpu-bins
shared=${EMBER_SHARED:-$root/../shared}
limit_mib=40 # the run tool carries at most 64 MiB, the working tree (≈ 12 MiB) included

if ! git check-ignore -q "$out/x"; then
	echo "build.sh: $out/ is not ignored by git (add /$out/ to .gitignore)" >&2
	exit 1
fi
rm -rf "$out"
mkdir -p "$out"

export CGO_ENABLED=0
flags="-tags cuda -trimpath"
ldflags="-s -w"

# name  package  -test.run filter (empty: all)  -- what a GPU adds:
#   cuda:        the backend itself, every kernel against the CPU backend
#   distributed: the NCCL process group (the rest of the package runs the same on any machine)
#   ember:       bench workloads trained on the GPU against the CPU, GPU JSON keys
#   tensor, autograd, nn, optim: their *OnCUDA tests (device_cuda_test.go) run the op,
#                backward, layer and training tables of the emulated-device tests on cuda:0
cat >"$out/tests.txt" <<'EOF'
cuda ./cuda
distributed ./distributed ^(TestNCCL|TestLoadDriver|TestNewNCCLGroup)
ember ./cmd/ember ^(TestWorkloadsOnCUDA|TestBenchNoDevice)$
tensor ./tensor OnCUDA
autograd ./autograd OnCUDA
nn ./nn OnCUDA
optim ./optim OnCUDA
EOF
while read -r name pkg filter; do
	echo "build.sh: go test -c $pkg -> $out/$name.test"
	go test -c $flags -ldflags="$ldflags" -o "$out/$name.test" "$pkg"
	gzip -9 "$out/$name.test"
done <"$out/tests.txt"
echo "build.sh: go build ./cmd/ember -> $out/ember"
go build $flags -ldflags="$ldflags" -o "$out/ember" ./cmd/ember
gzip -9 "$out/ember"

cp bench/torch_workloads.py bench/compare.py bench/gpu/run.sh "$out/"
{
	echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' plus uncommitted changes')"
	go version
} >"$out/BUILD.txt"
if [ -f "$shared/gpu/run-on-gpu.sh" ]; then
	cp "$shared/gpu/run-on-gpu.sh" "$out/"
else
	echo "build.sh: $shared/gpu/run-on-gpu.sh not found (set EMBER_SHARED to the shared folder)" >&2
	exit 1
fi

ls -l "$out"
kib=$(du -sk "$out" | cut -f1)
echo "build.sh: $out/ holds $((kib / 1024)) MiB (limit here $limit_mib MiB)"
if [ "$kib" -gt $((limit_mib * 1024)) ]; then
	echo "build.sh: $out/ is over $limit_mib MiB: drop a binary" >&2
	exit 1
fi
