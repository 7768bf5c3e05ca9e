"""Runs `ember bench` and its PyTorch twins (bench/torch_workloads.py) alternately and prints a
Markdown ratio table: Ember samples/s ÷ PyTorch samples/s (GFLOP/s for gemm) and the peak-RSS
ratio, each side the median over the repeats.

usage (from the repository root):
    /usr/bin/python3 bench/compare.py [-workloads gemm,mlp,cnn,...] [-threads 1,2] [-repeats 3]
                                      [-steps N|NAME=N,...] [-warmup N|NAME=N,...]
                                      [-sizes 256,512,1024,2048] [-omp-wait best|default|passive]
                                      [-device cpu|cuda|cuda:N] [-tf32] [-ember PATH] [-python PATH]
                                      [-budget SECONDS] [-jsonl PATH] [-gemm-lib torch|numpy]

Every measurement is a fresh process (so peak RSS is that workload's own). For each thread count,
workload and repeat, the Ember and PyTorch processes run back to back, their order alternating
between repeats, so both sides see the same machine load. -omp-wait best (the default) runs
PyTorch with libgomp's default wait policy and with OMP_WAIT_POLICY=PASSIVE at more than one
thread and keeps the faster of the two medians. A workload Ember cannot run yet is listed with
the layers it needs, and PyTorch is not run for it.

-device cuda compares on a GPU: the default workloads become gemm (sizes 1024..8192, TFLOP/s),
mlp, cnn, resnet50_b64 and resnet50_train_b64, both sides use every core (-threads defaults to
the machine's count), and the table adds each side's peak allocated GPU memory and the targets
of the CUDA work (GEMM >= 0.90x torch.matmul, training and inference >= 0.8x PyTorch eager, peak
GPU memory <= 1.2x). -ember runs a prebuilt `ember` binary instead of building one with `go build`
(the GPU machine has no Go toolchain). -budget stops starting processes once that many seconds
have passed (a process still running is stopped at the budget) and lists what was not measured.
-jsonl appends every measured line, tagged with its side and repeat, to a file.
-gemm-lib numpy times the gemm workload's other side with numpy's a @ b (the BLAS numpy links,
Debian's OpenBLAS) instead of torch.mm.
The table starts with a cpu: line: the CPU model, its caches and the instruction path Ember's
kernels took (`ember bench -cpuinfo`). EMBER_CPU=avx2 (or generic) in the environment forces
Ember onto a lower path than the machine's best, to time the AVX2 kernels on an AVX-512 machine.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ALL = ["gemm", "mlp", "cnn", "resnet18_b1", "resnet18_b16", "resnet50_b1", "resnet50_b16", "gru", "transformer"]
ALL_GPU = ["gemm", "mlp", "cnn", "resnet50_b64", "resnet50_train_b64"]
# Targets on a GPU: Ember ÷ PyTorch rate at least this much (gemm: of torch.matmul).
GPU_TARGETS = {"gemm": 0.90, "mlp": 0.8, "cnn": 0.8, "resnet50_b64": 0.8, "resnet50_train_b64": 0.8}
GPU_MEM_TARGET = 1.2  # Ember's peak GPU memory at most this multiple of PyTorch's

ap = argparse.ArgumentParser()
ap.add_argument("-workloads", default="")
ap.add_argument("-threads", default="")
ap.add_argument("-repeats", type=int, default=3)
ap.add_argument("-steps", default="", help="timed steps per process: N for every workload, or NAME=N,... "
                "(missing: each workload's default)")
ap.add_argument("-warmup", default="", help="warm-up steps, as -steps")
ap.add_argument("-sizes", default="")
ap.add_argument("-omp-wait", default="best", choices=["best", "default", "passive"])
ap.add_argument("-python", default="/usr/bin/python3")
ap.add_argument("-device", default="cpu")
ap.add_argument("-tf32", action="store_true", help="allow TF32 on both sides (GPU)")
ap.add_argument("-ember", default="", help="prebuilt ember binary (default: go build ./cmd/ember)")
ap.add_argument("-budget", type=float, default=0, help="seconds after which no process is started (0: none)")
ap.add_argument("-jsonl", default="", help="append every measured JSON line, tagged, to this file")
ap.add_argument("-gemm-lib", default="torch", choices=["torch", "numpy"],
                help="what gemm is compared with on the CPU: torch.mm or numpy's a @ b")
args = ap.parse_args()
GPU = args.device == "cuda" or args.device.startswith("cuda:")
if args.device != "cpu" and not GPU:
    sys.exit("compare.py: unknown device %r (want cpu, cuda or cuda:N)" % args.device)
if args.tf32 and not GPU:
    sys.exit("compare.py: -tf32 needs -device cuda")
args.workloads = args.workloads or ",".join(ALL_GPU if GPU else ALL)
args.threads = args.threads or (str(os.cpu_count() or 1) if GPU else "1,2")
args.sizes = args.sizes or ("1024,2048,4096,8192" if GPU else "256,512,1024,2048")
if GPU:
    args.omp_wait = "default"
deadline = time.monotonic() + args.budget if args.budget > 0 else None

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The PyTorch twins sit next to this script (bench/, or the gpu-bins folder of bench/gpu/build.sh).
workloads_py = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_workloads.py")
if args.ember:
    binary = os.path.abspath(args.ember)
else:
    binary = os.path.join(tempfile.mkdtemp(prefix="ember-bench-"), "ember")
    subprocess.run(["go", "build", "-o", binary, "./cmd/ember"], cwd=root, check=True)
# The CPU and the instruction path Ember's kernels take (EMBER_CPU=avx2 or generic forces a lower one),
# printed above the table so that every reading names what it measured.
cpu_line = subprocess.run([binary, "bench", "-cpuinfo"], cwd=root, capture_output=True, text=True).stdout.strip()


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class OutOfTime(Exception):
    """The -budget ran out before or during a process."""


def json_lines(cmd, env=None):
    timeout = None
    if deadline is not None:
        timeout = deadline - time.monotonic()
        if timeout < 5:
            raise OutOfTime("not measured: the time budget was spent")
    try:
        p = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        side = "ember" if cmd[0] == binary else "PyTorch"
        raise OutOfTime("stopped at the time budget (%.0f s) while %s ran" % (args.budget, side))
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["exit status %d" % p.returncode])[-1]
    return [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")], None


def record(side, rep, res):
    if args.jsonl:
        with open(args.jsonl, "a") as f:
            for r in res:
                f.write(json.dumps(dict(r, side=side, repeat=rep)) + "\n")


def per_workload(spec, w):
    """Returns the count for workload w from "N" or "NAME=N,NAME=N" (0 when absent)."""
    for part in filter(None, spec.split(",")):
        name, _, n = part.rpartition("=")
        if name in ("", w):
            return int(n)
    return 0


def common(w, t):
    a = ["-workload", w, "-threads", str(t)]
    if GPU:
        a += ["-device", args.device] + (["-tf32"] if args.tf32 else [])
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
    lib = ["-lib", args.gemm_lib] if w == "gemm" and not GPU else []
    return json_lines([args.python, workloads_py, "-omp-wait", wait] + common(w, t) + lib, env)


def key(r):
    return (r["workload"], r.get("n", 0))


def rate(r):
    if GPU and "tflops" in r:
        return r["tflops"]
    return r["gflops"] if "gflops" in r else r["samples_per_s"]


def gpu_mb(rs):
    vals = [r["peak_gpu_mb"] for r in rs if "peak_gpu_mb" in r]
    return statistics.median(vals) if vals else None


def fmt(x):
    return "%.1f" % x if x < 1000 else "{:,.0f}".format(x)


def fmt_rate(x):
    return "%.2f" % x if x < 10 else fmt(x)


rows = []
stopped = None  # why the budget ended the run, once it has
for t in [int(x) for x in args.threads.split(",")]:
    waits = [args.omp_wait] if args.omp_wait != "best" else (["default", "passive"] if t > 1 else ["default"])
    for w in args.workloads.split(","):
        if stopped:
            rows.append(dict(name=w, t=t, missing=stopped))
            continue
        em, tr = {}, {wt: {} for wt in waits}
        missing = None
        for rep in range(args.repeats):
            order = ["ember"] + waits if rep % 2 == 0 else waits + ["ember"]
            try:
                for side in order:
                    if side == "ember":
                        res, err = ember(w, t)
                        if res is None:
                            missing = err
                            break
                        record("ember", rep, res)
                        for r in res:
                            em.setdefault(key(r), []).append(r)
                    else:
                        res, err = torch(w, t, side)
                        if res is None:
                            missing = "PyTorch failed: " + err
                            break
                        record("torch", rep, res)
                        for r in res:
                            tr[side].setdefault(key(r), []).append(r)
            except OutOfTime as e:
                stopped = str(e)
                if rep == 0 or not all(tr[wt] for wt in waits) or not em:
                    missing = stopped
                # else: keep the repeats measured so far
                log("threads=%d %s: %s" % (t, w, stopped))
                break
            if missing:
                break
            log("threads=%d %s repeat %d done" % (t, w, rep + 1))
        if missing:
            log("threads=%d %s: %s" % (t, w, missing))
            row = dict(name=w, t=t, missing=missing)
            if GPU and not stopped and not missing.startswith("PyTorch") and not any(tr[wt] for wt in waits):
                # Ember could not run it: measure PyTorch once, as the reference to reach.
                try:
                    res, err = torch(w, t, waits[0])
                except OutOfTime as e:
                    stopped, res = str(e), None
                if res:
                    record("torch", 0, res)
                    row["reference"] = ", ".join(
                        "%s%s" % (fmt_rate(rate(r)), " (n=%d)" % r["n"] if "n" in r else "") for r in res)
            rows.append(row)
            continue
        for k, ers in em.items():
            if any(k not in tr[wt] for wt in waits):
                rows.append(dict(name=k[0], t=t, missing="PyTorch printed no result for %s" % (k,)))
                continue
            best = None
            for wt in waits:
                trs = tr[wt][k]
                cand = (statistics.median(rate(r) for r in trs), statistics.median(r["peak_rss_mb"] for r in trs), wt, trs)
                if best is None or cand[0] > best[0]:
                    best = cand
            unit = "TFLOP/s" if GPU else "GFLOP/s"
            if k[0] == "gemm":
                name = "gemm %d² (%s)" % (k[1], unit)
            elif "_b" in k[0]:
                name = k[0]
            else:
                name = "%s (b%d)" % (k[0], ers[0]["batch"])
            rows.append(dict(name=name, workload=k[0], t=t, e_rate=statistics.median(rate(r) for r in ers),
                             t_rate=best[0], e_rss=statistics.median(r["peak_rss_mb"] for r in ers), t_rss=best[1],
                             wait=best[2], e_gpu=gpu_mb(ers), t_gpu=gpu_mb(best[3]), repeats=min(len(ers), len(best[3]))))


print("cpu: %s" % (cpu_line or "unknown (ember bench -cpuinfo printed nothing)"))
if GPU:
    print("| workload | Ember | PyTorch | Ember ÷ PyTorch | target | Ember peak GPU MB | PyTorch peak GPU MB "
          "| GPU memory ratio (target ≤ %.1f×) | repeats |" % GPU_MEM_TARGET)
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "missing" in r:
            print("| %s | %s | %s | | | | | | |" % (r["name"], r["missing"].replace("ember bench: ", "").replace("|", "/"),
                                                 r.get("reference", "")))
            continue
        ratio = r["e_rate"] / r["t_rate"]
        target = GPU_TARGETS.get(r["workload"])
        tcell = "" if target is None else ("≥ %.2f× %s" % (target, "met" if ratio >= target else "**not met**"))
        mem = ""
        if r["e_gpu"] is not None and r["t_gpu"]:
            m = r["e_gpu"] / r["t_gpu"]
            mem = "%.2f× %s" % (m, "met" if m <= GPU_MEM_TARGET else "**not met**")
        print("| %s | %s | %s | **%.2f×** | %s | %s | %s | %s | %d |" % (
            r["name"], fmt_rate(r["e_rate"]), fmt_rate(r["t_rate"]), ratio, tcell,
            "" if r["e_gpu"] is None else "%.0f" % r["e_gpu"], "" if r["t_gpu"] is None else "%.0f" % r["t_gpu"],
            mem, r["repeats"]))
else:
    print("| workload | threads | Ember | PyTorch | Ember ÷ PyTorch | Ember peak RSS MB | PyTorch peak RSS MB | RSS ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "missing" in r:
            print("| %s | %d | %s | | | | | |" % (r["name"], r["t"], r["missing"].replace("ember bench: ", "").replace(r["name"] + " ", "", 1).replace("|", "/")))
            continue
        tag = " (OMP PASSIVE)" if r["wait"] == "passive" else ""
        print("| %s | %d | %s | %s%s | **%.2f×** | %.0f | %.0f | %.2f× |" % (
            r["name"], r["t"], fmt(r["e_rate"]), fmt(r["t_rate"]), tag, r["e_rate"] / r["t_rate"], r["e_rss"], r["t_rss"],
            r["e_rss"] / r["t_rss"]))
log("machine: %s, python %s, OPENBLAS_CORETYPE=%s, device %s%s%s" % (
    platform.machine(), platform.python_version(), os.environ.get("OPENBLAS_CORETYPE", "unset (auto)"), args.device,
    " (TF32 allowed)" if args.tf32 else "",
    "; gemm's other side is numpy (a @ b), not torch.mm" if args.gemm_lib == "numpy" and not GPU else ""))
