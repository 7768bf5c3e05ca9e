"""PyTorch twins of the `ember bench` workloads (see cmd/ember/bench_workloads.go).

usage: /usr/bin/python3 bench/torch_workloads.py -workload NAME -threads N [-steps N] [-warmup N]
                                                 [-sizes 256,512,1024,2048] [-lib torch|numpy]
                                                 [-omp-wait default|passive]

NAME: gemm | mlp | cnn | resnet18_b1 | resnet18_b16 | resnet50_b1 | resnet50_b16 | gru | transformer

The definitions (model, batch, optimizer, loss, synthetic data, seeds, default steps) are those of
../shared/bench/workloads.py. Prints one JSON object per line with the keys of `ember bench -json`:
workload, threads, batch, median_ms, samples_per_s, peak_rss_mb, steps (gemm adds n and gflops).
Peak RSS is VmHWM from /proc/self/status, reset (clear_refs) just before the workload is built,
as ember bench does.
"""
import argparse
import json
import os
import statistics
import time

ap = argparse.ArgumentParser()
ap.add_argument("-workload", required=True)
ap.add_argument("-threads", type=int, required=True)
ap.add_argument("-steps", type=int, default=0)
ap.add_argument("-warmup", type=int, default=0)
ap.add_argument("-sizes", default="256,512,1024,2048")
ap.add_argument("-lib", default="torch", choices=["torch", "numpy"])
ap.add_argument("-omp-wait", default="default", choices=["default", "passive"])
args = ap.parse_args()

# torch.mm / nn.Linear in Debian's torch call OpenBLAS, which ignores torch.set_num_threads:
# set both thread counts in the environment before the import.
os.environ["OMP_NUM_THREADS"] = str(args.threads)
os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
if args.omp_wait == "passive":
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(args.threads)
torch.manual_seed(0)


def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_rss_mb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 3)
    except OSError:
        pass
    return -1


class CifarCNN(nn.Module):
    """The CIFAR-10 CNN of ilkarman/DeepLearningFrameworks (PyTorch_CNN notebook)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 50, 3, padding=1)
        self.conv2 = nn.Conv2d(50, 50, 3, padding=1)
        self.conv3 = nn.Conv2d(50, 100, 3, padding=1)
        self.conv4 = nn.Conv2d(100, 100, 3, padding=1)
        self.fc1 = nn.Linear(100 * 8 * 8, 512)
        self.fc2 = nn.Linear(512, 10)

    def forward(self, x):
        x = F.dropout(F.relu(F.max_pool2d(self.conv2(F.relu(self.conv1(x))), 2, 2)), 0.25, self.training)
        x = F.dropout(F.relu(F.max_pool2d(self.conv4(F.relu(self.conv3(x))), 2, 2)), 0.25, self.training)
        x = F.dropout(F.relu(self.fc1(x.view(-1, 100 * 8 * 8))), 0.5, self.training)
        return self.fc2(x)


class GRUSentiment(nn.Module):
    """ilkarman's IMDB GRU: embedding 30000×125, GRU 100, linear to 2 classes."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(30000, 125)
        self.gru = nn.GRU(125, 100, num_layers=1, batch_first=True)
        self.l_out = nn.Linear(100, 2)

    def forward(self, x):
        h0 = torch.zeros(1, x.shape[0], 100)
        out, _ = self.gru(self.embedding(x), h0)
        return self.l_out(out[:, -1, :])


def train_step(model, opt, x, y):
    model.train()
    lossf = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()

    return step


def build(w):
    """Returns (step, batch, default_steps, default_warmup)."""
    g = torch.Generator().manual_seed(0)
    if w == "mlp":
        m = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        x, y = torch.randn(128, 784, generator=g), torch.randint(0, 10, (128,), generator=g)
        return train_step(m, torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9), x, y), 128, 200, 20
    if w == "cnn":
        m = CifarCNN()
        x, y = torch.randn(64, 3, 32, 32, generator=g), torch.randint(0, 10, (64,), generator=g)
        return train_step(m, torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9), x, y), 64, 30, 5
    if w.startswith("resnet"):
        import torchvision

        name, b = w.split("_b")
        b = int(b)
        m = getattr(torchvision.models, name)(weights=None).eval()
        x = torch.randn(b, 3, 224, 224, generator=g)

        def step():
            with torch.inference_mode():
                m(x)

        n = {("resnet18", 1): 40, ("resnet18", 16): 8, ("resnet50", 1): 20, ("resnet50", 16): 5}[(name, b)]
        return step, b, n, 3
    if w == "gru":
        m = GRUSentiment()
        x, y = torch.randint(0, 30000, (64, 150), generator=g), torch.randint(0, 2, (64,), generator=g)
        opt = torch.optim.Adam(m.parameters(), lr=0.001, betas=(0.9, 0.999), eps=1e-8)
        return train_step(m, opt, x, y), 64, 30, 5
    if w == "transformer":
        m = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True).train()
        x = torch.randn(16, 128, 256, generator=g)

        def step():
            m.zero_grad(set_to_none=True)
            m(x).pow(2).mean().backward()

        return step, 16, 50, 5
    raise SystemExit("torch_workloads.py: unknown workload " + w)


def emit(**kw):
    print(json.dumps(kw), flush=True)


def run_gemm():
    rng = np.random.default_rng(0)
    samples_n = args.steps or 15
    for n in [int(s) for s in args.sizes.split(",")]:
        reset_peak_rss()
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        if args.lib == "torch":
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            f = lambda: torch.mm(ta, tb)  # noqa: E731
        else:
            f = lambda: a @ b  # noqa: E731
        warm = args.warmup or 2
        t0 = time.perf_counter()
        for _ in range(warm):
            f()
        per = (time.perf_counter() - t0) / warm
        inner = max(1, int(0.05 / max(per, 1e-6)))
        samples = []
        for _ in range(samples_n):
            t0 = time.perf_counter()
            for _ in range(inner):
                f()
            samples.append((time.perf_counter() - t0) / inner)
        med = statistics.median(samples)
        emit(workload="gemm", threads=args.threads, batch=1, median_ms=round(med * 1e3, 3),
             samples_per_s=round(1 / med, 3), peak_rss_mb=peak_rss_mb(), steps=samples_n, n=n,
             gflops=round(2.0 * n ** 3 / med / 1e9, 3), lib=args.lib)


def main():
    if args.workload == "gemm":
        run_gemm()
        return
    reset_peak_rss()
    step, batch, n, warm = build(args.workload)
    n, warm = args.steps or n, args.warmup or warm
    for _ in range(warm):
        step()
    wall = []
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        wall.append(time.perf_counter() - t0)
    med = statistics.median(wall)
    emit(workload=args.workload, threads=args.threads, batch=batch, median_ms=round(med * 1e3, 3),
         samples_per_s=round(batch / med, 3), peak_rss_mb=peak_rss_mb(), steps=n,
         omp_wait=args.omp_wait)


main()
