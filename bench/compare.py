"""Runs `ember bench` and its PyTorch twins (bench/torch_workloads.py) alternately and prints a
Markdown ratio table: Ember samples/s ÷ PyTorch samples/s (GFLOP/s for gemm) and the peak-RSS
ratio, each side the median over the repeats.

usage (from the repository root):
    /usr/bin/python3 bench/compare.py [-workloads gemm,mlp,cnn,...] [-threads 1,2] [-repeats 3]
                                      [-steps N|NAME=N,...] [-warmup N|NAME=N,...]
                                      [-sizes 256,512,1024,2048] [-omp-wait best|default|passive]

Every measurement is a fresh process (so peak RSS is that workload's own). For each thread count,
workload and repeat, the Ember and PyTorch processes run back to back, their order alternating
between repeats, so both sides see the same machine load. -omp-wait best (the default) runs
PyTorch with libgomp's default wait policy and with OMP_WAIT_POLICY=PASSIVE at more than one
thread and keeps the faster of the two medians. A workload Ember cannot run yet is listed with
the layers it needs, and PyTorch is not run for it.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

ALL = ["gemm", "mlp", "cnn", "resnet18_b1", "resnet18_b16", "resnet50_b1", "resnet50_b16", "gru", "transformer"]

ap = argparse.ArgumentParser()
ap.add_argument("-workloads", default=",".join(ALL))
ap.add_argument("-threads", default="1,2")
ap.add_argument("-repeats", type=int, default=3)
ap.add_argument("-steps", default="", help="timed steps per process: N for every workload, or NAME=N,... "
                "(missing: each workload's default)")
ap.add_argument("-warmup", default="", help="warm-up steps, as -steps")
ap.add_argument("-sizes", default="256,512,1024,2048")
ap.add_argument("-omp-wait", default="best", choices=["best", "default", "passive"])
ap.add_argument("-python", default="/usr/bin/python3")
args = ap.parse_args()

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
binary = os.path.join(tempfile.mkdtemp(prefix="ember-bench-"), "ember")
subprocess.run(["go", "build", "-o", binary, "./cmd/ember"], cwd=root, check=True)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def json_lines(cmd, env=None):
    p = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["exit status %d" % p.returncode])[-1]
    return [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")], None


def per_workload(spec, w):
    """Returns the count for workload w from "N" or "NAME=N,NAME=N" (0 when absent)."""
    for part in filter(None, spec.split(",")):
        name, _, n = part.rpartition("=")
        if name in ("", w):
            return int(n)
    return 0


def common(w, t):
    a = ["-workload", w, "-threads", str(t)]
    for flag, spec in (("-steps", args.steps), ("-warmup", args.warmup)):
        n = per_workload(spec, w)
        if n:
            a += [flag, str(n)]
    if w == "gemm":
        a += ["-sizes", args.sizes]
    return a


def ember(w, t):
    return json_lines([binary, "bench", "-json"] + common(w, t))


def torch(w, t, wait):
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    return json_lines([args.python, "bench/torch_workloads.py", "-omp-wait", wait] + common(w, t), env)


def key(r):
    return (r["workload"], r.get("n", 0))


def rate(r):
    return r["gflops"] if "gflops" in r else r["samples_per_s"]


rows = []
for t in [int(x) for x in args.threads.split(",")]:
    waits = [args.omp_wait] if args.omp_wait != "best" else (["default", "passive"] if t > 1 else ["default"])
    for w in args.workloads.split(","):
        em, tr = {}, {wt: {} for wt in waits}
        missing = None
        for rep in range(args.repeats):
            order = ["ember"] + waits if rep % 2 == 0 else waits + ["ember"]
            for side in order:
                if side == "ember":
                    res, err = ember(w, t)
                    if res is None:
                        missing = err
                        break
                    for r in res:
                        em.setdefault(key(r), []).append(r)
                else:
                    res, err = torch(w, t, side)
                    if res is None:
                        sys.exit("torch_workloads.py %s failed: %s" % (w, err))
                    for r in res:
                        tr[side].setdefault(key(r), []).append(r)
            if missing:
                break
            log("threads=%d %s repeat %d done" % (t, w, rep + 1))
        if missing:
            log("threads=%d %s: %s" % (t, w, missing))
            rows.append((w, t, None, None, None, None, None, missing))
            continue
        for k, ers in em.items():
            e_rate = statistics.median(rate(r) for r in ers)
            e_rss = statistics.median(r["peak_rss_mb"] for r in ers)
            best = None
            for wt in waits:
                trs = tr[wt][k]
                cand = (statistics.median(rate(r) for r in trs), statistics.median(r["peak_rss_mb"] for r in trs), wt)
                if best is None or cand[0] > best[0]:
                    best = cand
            if k[0] == "gemm":
                name = "gemm %d² (GFLOP/s)" % k[1]
            elif "_b" in k[0]:
                name = k[0]
            else:
                name = "%s (b%d)" % (k[0], ers[0]["batch"])
            rows.append((name, t, e_rate, best[0], e_rss, best[1], best[2], None))


def fmt(x):
    return "%.1f" % x if x < 1000 else "{:,.0f}".format(x)


print("| workload | threads | Ember | PyTorch | Ember ÷ PyTorch | Ember peak RSS MB | PyTorch peak RSS MB | RSS ratio |")
print("|---|---|---|---|---|---|---|---|")
for name, t, er, tr_, erss, trss, wt, missing in rows:
    if missing:
        print("| %s | %d | %s | | | | | |" % (name, t, missing.replace("ember bench: ", "").replace(name + " ", "", 1).replace("|", "/")))
        continue
    tag = " (OMP PASSIVE)" if wt == "passive" else ""
    print("| %s | %d | %s | %s%s | **%.2f×** | %.0f | %.0f | %.2f× |" % (
        name, t, fmt(er), fmt(tr_), tag, er / tr_, erss, trss, erss / trss))
log("machine: %s, python %s, OPENBLAS_CORETYPE=%s" % (
    platform.machine(), platform.python_version(), os.environ.get("OPENBLAS_CORETYPE", "unset (auto)")))
