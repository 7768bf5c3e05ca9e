#!/bin/sh
# Runs on the GPU machine (no Go toolchain, no network; python3 with CUDA PyTorch), from the
# repository root, in one call of the run tool:
#   1. every test binary that bench/gpu/build.sh put in gpu-bins/ (-test.v) -> $OUT/tests.log
#   2. the GPU workloads of `ember bench -device cuda`, alternately with their PyTorch twins,
#      3 repeats, medians -> $OUT/bench.jsonl (every measured line) and $OUT/ratios.md (table);
#      then gemm again with TF32 allowed on both sides, if time is left
# all bounded to about 8 minutes (EMBER_GPU_BUDGET seconds, the run tool's limit being 10).
#
# usage: sh gpu-bins/run.sh [workloads]    (default: gemm,mlp,cnn,resnet50_b64,resnet50_train_b64)
# environment: EMBER_GPU_BUDGET (seconds in all, default 470), EMBER_GPU_TEST_BUDGET (seconds for
# the tests, default 180), EMBER_GPU_TESTS=0 (benchmarks only), EMBER_GPU_TF32=1 (both sides may
# use TF32), PYTHON (default python3).
set -u
dir=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$dir") # gpu-bins/ sits at the repository root; tests run in their package folders
OUT=${OUT:-$dir/out}
mkdir -p "$OUT"
budget=${EMBER_GPU_BUDGET:-470}  # seconds for the whole script
test_budget=${EMBER_GPU_TEST_BUDGET:-180}
[ "${EMBER_GPU_TESTS:-1}" = 0 ] && test_budget=0
tf32=""
[ "${EMBER_GPU_TF32:-0}" = 1 ] && tf32=-tf32
workloads=${1:-gemm,mlp,cnn,resnet50_b64,resnet50_train_b64}
python=${PYTHON:-python3}
start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }

# Unpack the gzipped binaries of build.sh.
bin=${TMPDIR:-/tmp}/ember-gpu-bins
rm -rf "$bin" && mkdir -p "$bin" || exit 1
for f in "$dir"/*.gz; do
	b=$(basename "$f" .gz)
	gzip -dc "$f" >"$bin/$b" && chmod +x "$bin/$b" || { echo "run.sh: cannot unpack $f" >&2; exit 1; }
done

# Library discovery, as run-on-gpu.sh: the pip wheels' nvidia/*/lib folders and the usual CUDA
# and driver folders go on LD_LIBRARY_PATH (package cuda also searches them itself).
libdirs=""
add() { [ -d "$1" ] && case ":$libdirs:" in *":$1:"*) ;; *) libdirs="$libdirs${libdirs:+:}$1" ;; esac; }
for sp in /opt/torch/.venv/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages /usr/lib/python3/dist-packages; do
	for d in "$sp"/nvidia/*/lib; do add "$d"; done
done
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do add "$d"; done
export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1

{
	echo "== machine ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
	cat "$dir/BUILD.txt" 2>/dev/null
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not found"
	"$python" -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__, "cuda", torch.version.cuda, "device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")' 2>&1
	echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
} | tee "$OUT/machine.txt"

# 1. Tests, each binary in its package folder (tests read testdata/ and embedded PTX paths).
: >"$OUT/tests.log"
rc=0
while read -r name pkg filter; do
	t="$bin/$name.test"
	left=$((test_budget - $(elapsed)))
	if [ "$test_budget" -eq 0 ]; then
		continue
	fi
	if [ "$left" -lt 10 ]; then
		echo "== $name.test: not run, the test budget ($test_budget s) is spent" | tee -a "$OUT/tests.log"
		rc=1
		continue
	fi
	echo "== $name.test in $pkg (run ${filter:-all}, at most $left s)" | tee -a "$OUT/tests.log"
	(cd "$root/$pkg" && timeout -k 5 "$left" "$t" -test.v -test.count=1 ${filter:+-test.run="$filter"}) >>"$OUT/tests.log" 2>&1
	r=$?
	[ $r -eq 124 ] && echo "== $name.test: killed at $left s" >>"$OUT/tests.log"
	echo "== $name.test exit=$r" | tee -a "$OUT/tests.log"
	[ $r -eq 0 ] || rc=$r
done <"$dir/tests.txt"
echo "== tests: $(grep -c -- '--- PASS' "$OUT/tests.log") passed, $(grep -c -- '--- FAIL' "$OUT/tests.log") failed, $(grep -c -- '--- SKIP' "$OUT/tests.log") skipped ($(elapsed) s)"
grep -- '--- FAIL' "$OUT/tests.log" | head -40

# 2. Benchmarks, Ember and PyTorch alternately, within what is left of the budget.
left=$((budget - $(elapsed)))
echo "== bench: $workloads, 3 repeats, at most $left s${tf32:+, TF32 allowed}"
: >"$OUT/bench.jsonl"
"$python" "$dir/compare.py" -device cuda -ember "$bin/ember" -python "$python" -repeats 3 $tf32 \
	-workloads "$workloads" -budget "$left" -jsonl "$OUT/bench.jsonl" \
	-steps gemm=10,resnet50_b64=10,resnet50_train_b64=10 -warmup resnet50_b64=3,resnet50_train_b64=3 \
	>"$OUT/ratios.md" 2>"$OUT/bench.log"
r=$?
cat "$OUT/bench.log"
if [ $r -ne 0 ]; then
	echo "== compare.py exit=$r"
	rc=$r
fi
# The TF32 GEMM target too, if gemm was asked for and time is left (as torch.matmul with TF32 on).
left=$((budget - $(elapsed)))
case ",$workloads," in *,gemm,*) want_tf32=1 ;; *) want_tf32=0 ;; esac
if [ -z "$tf32" ] && [ "$want_tf32" = 1 ] && [ "$left" -gt 40 ]; then
	echo "== bench: gemm with TF32 allowed on both sides, 3 repeats, at most $left s"
	{
		echo
		echo "With TF32 allowed on both sides (Ember -tf32, PyTorch fp32_precision tf32):"
		echo
		"$python" "$dir/compare.py" -device cuda -ember "$bin/ember" -python "$python" -repeats 3 -tf32 \
			-workloads gemm -budget "$left" -jsonl "$OUT/bench.jsonl" -steps gemm=10 2>>"$OUT/bench.log"
	} >>"$OUT/ratios.md"
fi
echo "== ratios ($(elapsed) s in all)"
cat "$OUT/ratios.md"
exit $rc
