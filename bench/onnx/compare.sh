#!/bin/sh
# Compares Ember's ONNX session with ONNX Runtime (npm onnxruntime-node) on
# one model, batch 1, at 1 and 2 intra-op threads. The two engines run
# alternately, ROUNDS times each per thread count, each round a fresh
# process timing ITERS runs after 5 warm-ups; the table shows the median of
# the rounds' medians, the ratio Ember/ORT, the fastest single run of each
# (a steadier figure on a busy machine) and each engine's peak RSS.
#
# Setup (once):
#   /usr/bin/python3 internal/golden/gen/gen_onnx_zoo.py      # writes onnx/testdata/zoo
#   (cd /tmp && ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node)
# Run from the repository root:
#   sh bench/onnx/compare.sh [MODEL_DIR]    # default onnx/testdata/zoo/resnet18_opset17
# Environment: ROUNDS (default 5), ITERS (default 20), THREADS (default "1 2"),
# ORT_MODULES (default /tmp/node_modules), EMBER_CPU (avx512, avx2 or
# generic: forces Ember's kernels onto a lower instruction path; the cpu:
# line names the path taken).
set -eu

dir=${1:-onnx/testdata/zoo/resnet18_opset17}
rounds=${ROUNDS:-5}
iters=${ITERS:-20}
threads=${THREADS:-"1 2"}
export NODE_PATH=${ORT_MODULES:-/tmp/node_modules}

for f in "$dir/model.onnx" "$dir/input_0.npy" "$dir/output_0.npy"; do
	[ -f "$f" ] || { echo "compare.sh: $f missing: run internal/golden/gen/gen_onnx_zoo.py" >&2; exit 1; }
done
[ -d "$NODE_PATH/onnxruntime-node" ] || { echo "compare.sh: onnxruntime-node not in $NODE_PATH" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/emberbench" ./bench/onnx/emberbench

# field FILE KEY prints KEY's number from each JSON line of FILE.
field() { sed -n "s/.*\"$2\":\([0-9.eE+-]*\).*/\1/p" "$1"; }
# median reads numbers on stdin and prints their median.
median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
maxof() { sort -g | tail -n 1; }

echo "model: $dir (batch 1), $rounds alternating rounds x $iters runs, $(nproc) CPUs"
echo "cpu: $("$tmp/emberbench" -cpuinfo)"
printf '%-8s %10s %10s %6s %10s %10s %6s %10s %10s %12s %12s\n' threads ember_ms ort_ms ratio ember_min ort_min ratio ember_MiB ort_MiB ember_maxerr ort_maxerr
for t in $threads; do
	: >"$tmp/ember.$t"
	: >"$tmp/ort.$t"
	i=0
	while [ $i -lt "$rounds" ]; do
		"$tmp/emberbench" -model "$dir/model.onnx" -input "$dir/input_0.npy" -ref "$dir/output_0.npy" -threads "$t" -iters "$iters" >>"$tmp/ember.$t"
		node bench/onnx/ort_bench.js "$dir/model.onnx" "$dir/input_0.npy" "$t" "$iters" "$dir/output_0.npy" >>"$tmp/ort.$t"
		i=$((i + 1))
	done
	em=$(field "$tmp/ember.$t" median_ms | median)
	om=$(field "$tmp/ort.$t" median_ms | median)
	en=$(field "$tmp/ember.$t" min_ms | sort -g | head -n 1)
	on=$(field "$tmp/ort.$t" min_ms | sort -g | head -n 1)
	er=$(field "$tmp/ember.$t" peak_rss_mib | maxof)
	or=$(field "$tmp/ort.$t" peak_rss_mib | maxof)
	ee=$(field "$tmp/ember.$t" max_abs_diff | maxof)
	oe=$(field "$tmp/ort.$t" max_abs_diff | maxof)
	printf '%-8s %10.2f %10.2f %6.2f %10.2f %10.2f %6.2f %10.1f %10.1f %12.2g %12.2g\n' "$t" "$em" "$om" "$(echo "$em $om" | awk '{print $1/$2}')" \
		"$en" "$on" "$(echo "$en $on" | awk '{print $1/$2}')" "$er" "$or" "$ee" "$oe"
done
