#!/bin/sh
# The serving benchmarks of issue 25 on one single-input model:
#   - examples/onnx-serve (package serve) and bench/serve/naive (one shared
#     session, no batching, no limit) under "ember serve-bench", at 1 and at
#     $CLIENTS clients, each run in a fresh server process: throughput,
#     latency, server RSS after warm-up, at the end and its peak;
#   - examples/onnx-serve again at half the throughput it reached, paced
#     with -rate, for p99 against p50;
#   - ONNX Runtime (npm onnxruntime-node), one session with $THREADS
#     intra-op threads, at 1 and $CLIENTS concurrent clients.
#
# Usage, from the repository root:
#   sh bench/serve/run.sh MODEL.onnx INPUT.npy
# e.g. a ResNet-18 with a dynamic batch axis and one image:
#   go run ./cmd/ember onnx export -model resnet18 -input-shape 1,3,224,224 -o /tmp/resnet18.onnx
#   python3 -c 'import numpy as n; n.save("/tmp/x.npy", n.random.rand(1,3,224,224).astype("float32"))'
# Each round runs every configuration once, the engines alternating, and
# the medians of the rounds' throughputs are compared at the end.
# Environment: CLIENTS (16), REQUESTS (200 per run), ROUNDS (3), THREADS (nproc),
# PORT (18931), SERVE_FLAGS (more onnx-serve flags), ORT_MODULES
# (/work/ort/node_modules; the ORT lines are skipped without it).
set -eu

model=$1
input=$2
clients=${CLIENTS:-16}
requests=${REQUESTS:-200}
rounds=${ROUNDS:-3}
threads=${THREADS:-$(nproc)}
port=${PORT:-18931}
ort=${ORT_MODULES:-/work/ort/node_modules}
url=http://127.0.0.1:$port

tmp=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

go build -o "$tmp/onnx-serve" ./examples/onnx-serve
go build -o "$tmp/naive" ./bench/serve/naive
go build -o "$tmp/ember" ./cmd/ember

# start NAME: starts a server in the background and waits (up to 5
# minutes) until its /stats answers.
start() {
	case $1 in
	serve) "$tmp/onnx-serve" -model "$model" -addr "127.0.0.1:$port" -threads "$threads" ${SERVE_FLAGS:-} 2>"$tmp/server.log" & ;;
	naive) "$tmp/naive" -model "$model" -addr "127.0.0.1:$port" 2>"$tmp/server.log" & ;;
	esac
	pid=$!
	i=0
	until curl -sf "$url/stats" >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 300 ] || ! kill -0 "$pid" 2>/dev/null; then
			echo "run.sh: $1 did not start:" >&2
			cat "$tmp/server.log" >&2
			exit 1
		fi
		sleep 1
	done
}

stop() {
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
}

# bench NAME CLIENTS [serve-bench flags]: one fresh server, one load run.
bench() {
	name=$1
	c=$2
	shift 2
	start "$name"
	"$tmp/ember" serve-bench -url "$url/predict" -input "$input" -clients "$c" -requests "$requests" -duration 10m "$@" >"$tmp/out" 2>&1 || true
	stop
	peak=$(grep '^server rss_peak_mb=' "$tmp/out" | sed 's/^server rss_peak_mb=\([^ ]*\).*/\1/')
	printf '%-6s clients=%-3s %s rss_peak_mb=%s\n' "$name" "$c" "$(tail -n 1 "$tmp/out")" "$peak"
	tail -n 1 "$tmp/out" >"$tmp/last"
}

# thr LINE: the throughput figure of a summary line.
thr() { echo "$1" | sed 's/.*throughput=\([0-9.]*\)\/s.*/\1/'; }

# median FILE: the median of the numbers in FILE, one a line.
median() { sort -g "$1" | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "model=$model input=$input threads=$threads requests=$requests rounds=$rounds cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') cores=$(nproc)"
: >"$tmp/serve.thr"
: >"$tmp/naive.thr"
: >"$tmp/ort.thr"
for r in $(seq 1 "$rounds"); do
	echo "round $r"
	bench serve 1
	bench naive 1
	bench serve "$clients"
	thr "$(cat "$tmp/last")" >>"$tmp/serve.thr"
	bench naive "$clients"
	thr "$(cat "$tmp/last")" >>"$tmp/naive.thr"
	if [ -d "$ort/onnxruntime-node" ]; then
		line=$(NODE_PATH=$ort node bench/serve/ort_throughput.js "$model" "$input" "$threads" "$clients" "$requests")
		printf 'ort    clients=%-3s %s\n' "$clients" "$line"
		thr "$line" >>"$tmp/ort.thr"
	fi
done
s=$(median "$tmp/serve.thr")
n=$(median "$tmp/naive.thr")
echo "median throughput at $clients clients: serve=$s/s naive=$n/s serve/naive=$(echo "$s $n" | awk '{printf "%.2f", $1 / $2}')"
if [ -s "$tmp/ort.thr" ]; then
	o=$(median "$tmp/ort.thr")
	echo "median throughput at $clients clients: ort=$o/s serve/ort=$(echo "$s $o" | awk '{printf "%.2f", $1 / $2}')"
else
	echo "ORT skipped: no onnxruntime-node in $ort"
fi
half=$(echo "$s" | awk '{printf "%.2f", $1 / 2}')
bench serve "$clients" -rate "$half"
echo "(paced to -rate $half/s, half of the median serve throughput above)"
