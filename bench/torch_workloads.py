"""PyTorch twins of the `ember bench` workloads (see cmd/ember/bench_workloads.go).

usage: /usr/bin/python3 bench/torch_workloads.py -workload NAME -threads N [-steps N] [-warmup N]
                                                 [-sizes 256,512,1024,2048] [-lib torch|numpy]
                                                 [-omp-wait default|passive]
                                                 [-device cpu|cuda|cuda:N] [-tf32]

NAME: gemm | mlp | cnn | resnet18_b1 | resnet18_b16 | resnet50_b1 | resnet50_b16 | resnet50_b64 |
      resnet50_train_b64 | gru | transformer

The definitions (model, batch, optimizer, loss, synthetic data, seeds, default steps) are those of
../shared/bench/workloads.py; resnet50_b64 is its resnet inference at batch 64, and
resnet50_train_b64 a torchvision resnet50 training step (train mode, SGD lr 0.01 momentum 0.9,
cross-entropy, 64 random 224x224 images, labels among 1000 classes). Prints one JSON object per
line with the keys of `ember bench -json`: workload, threads, batch, median_ms, samples_per_s,
peak_rss_mb, steps (gemm adds n and gflops). Peak RSS is VmHWM from /proc/self/status, reset
(clear_refs) just before the workload is built, as ember bench does.

-device cuda puts the model and data on the GPU (data drawn on the CPU with the same seeds, then
moved), synchronizes the device before each timed step starts and after it ends, and adds the keys
device, peak_gpu_mb (torch.cuda.max_memory_allocated after reset_peak_memory_stats, less what was
allocated at the reset, in MiB), tf32, and for gemm tflops. TF32 is off (full FP32 matrix
products and convolutions, cuDNN's default of TF32 convolutions included) unless -tf32 is given.
Default gemm sizes on a GPU: 1024,2048,4096,8192.
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
ap.add_argument("-sizes", default="")
ap.add_argument("-lib", default="torch", choices=["torch", "numpy"])
ap.add_argument("-omp-wait", default="default", choices=["default", "passive"])
ap.add_argument("-device", default="cpu")
ap.add_argument("-tf32", action="store_true", help="let float32 matrix products and convolutions use TF32 (GPU)")
args = ap.parse_args()
GPU = args.device == "cuda" or args.device.startswith("cuda:")
if args.device != "cpu" and not GPU:
    raise SystemExit("torch_workloads.py: unknown device %r (want cpu, cuda or cuda:N)" % args.device)
if args.tf32 and not GPU:
    raise SystemExit("torch_workloads.py: -tf32 needs -device cuda")
if not args.sizes:
    args.sizes = "1024,2048,4096,8192" if GPU else "256,512,1024,2048"

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
DEV = torch.device("cuda:0" if args.device == "cuda" else args.device)


def set_tf32(on):
    """TF32 for float32 matrix products and cuDNN convolutions, on or off (PyTorch >= 2.9 has
    the fp32_precision settings; older versions the allow_tf32 flags)."""
    mode = "tf32" if on else "ieee"
    if hasattr(torch.backends.cuda.matmul, "fp32_precision"):
        torch.backends.cuda.matmul.fp32_precision = mode
        for sub in ("conv", "rnn"):
            if hasattr(getattr(torch.backends.cudnn, sub, None), "fp32_precision"):
                setattr(getattr(torch.backends.cudnn, sub), "fp32_precision", mode)
    else:
        torch.backends.cuda.matmul.allow_tf32 = on
        torch.backends.cudnn.allow_tf32 = on


if GPU:
    if not torch.cuda.is_available():
        raise SystemExit("torch_workloads.py: -device %s: torch sees no CUDA device" % args.device)
    torch.cuda.set_device(DEV)
    set_tf32(args.tf32)


def sync():
    if GPU:
        torch.cuda.synchronize(DEV)


def reset_peak_gpu():
    """Restarts the GPU peak counter; returns the bytes allocated now (subtracted from the peak)."""
    if not GPU:
        return 0
    torch.cuda.synchronize(DEV)
    torch.cuda.reset_peak_memory_stats(DEV)
    return torch.cuda.memory_allocated(DEV)


def gpu_keys(base):
    if not GPU:
        return {}
    return {"device": str(DEV),
            "peak_gpu_mb": round((torch.cuda.max_memory_allocated(DEV) - base) / 2 ** 20, 3),
            "tf32": args.tf32}


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
        h0 = torch.zeros(1, x.shape[0], 100, device=x.device)
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
    """Returns (step, batch, default_steps, default_warmup). The model is built on the CPU (same
    initialization on every device) and moved with the data to DEV before the optimizer exists."""
    g = torch.Generator().manual_seed(0)
    if w == "mlp":
        m = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).to(DEV)
        x, y = torch.randn(128, 784, generator=g).to(DEV), torch.randint(0, 10, (128,), generator=g).to(DEV)
        return train_step(m, torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9), x, y), 128, 200, 20
    if w == "cnn":
        m = CifarCNN().to(DEV)
        x, y = torch.randn(64, 3, 32, 32, generator=g).to(DEV), torch.randint(0, 10, (64,), generator=g).to(DEV)
        return train_step(m, torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9), x, y), 64, 30, 5
    if w.startswith("resnet") and "_train_b" in w:
        import torchvision

        name, b = w.split("_train_b")
        b = int(b)
        m = getattr(torchvision.models, name)(weights=None).to(DEV)
        x = torch.randn(b, 3, 224, 224, generator=g).to(DEV)
        y = torch.randint(0, 1000, (b,), generator=g).to(DEV)
        return train_step(m, torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9), x, y), b, 20, 5
    if w.startswith("resnet"):
        import torchvision

        name, b = w.split("_b")
        b = int(b)
        m = getattr(torchvision.models, name)(weights=None).eval().to(DEV)
        x = torch.randn(b, 3, 224, 224, generator=g).to(DEV)

        def step():
            with torch.inference_mode():
                m(x)

        n, warm = {("resnet18", 1): (40, 3), ("resnet18", 16): (8, 3), ("resnet50", 1): (20, 3),
                   ("resnet50", 16): (5, 3), ("resnet50", 64): (20, 5)}[(name, b)]
        return step, b, n, warm
    if w == "gru":
        m = GRUSentiment().to(DEV)
        x, y = torch.randint(0, 30000, (64, 150), generator=g).to(DEV), torch.randint(0, 2, (64,), generator=g).to(DEV)
        opt = torch.optim.Adam(m.parameters(), lr=0.001, betas=(0.9, 0.999), eps=1e-8)
        return train_step(m, opt, x, y), 64, 30, 5
    if w == "transformer":
        m = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True).train().to(DEV)
        x = torch.randn(16, 128, 256, generator=g).to(DEV)

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
        base = reset_peak_gpu()
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        if GPU:
            ta, tb = torch.from_numpy(a).to(DEV), torch.from_numpy(b).to(DEV)
            f = lambda: torch.mm(ta, tb)  # noqa: E731
        elif args.lib == "torch":
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            f = lambda: torch.mm(ta, tb)  # noqa: E731
        else:
            f = lambda: a @ b  # noqa: E731
        warm = args.warmup or 2
        t0 = time.perf_counter()
        for _ in range(warm):
            f()
        per = (time.perf_counter() - t0) / warm
        if GPU:  # the warm-up products were only queued: time one product on its own
            sync()
            t0 = time.perf_counter()
            f()
            sync()
            per = time.perf_counter() - t0
        inner = max(1, int(0.05 / max(per, 1e-6)))
        samples = []
        for _ in range(samples_n):
            t0 = time.perf_counter()
            for _ in range(inner):
                f()
            sync()
            samples.append((time.perf_counter() - t0) / inner)
        med = statistics.median(samples)
        flops = 2.0 * n ** 3 / med
        extra = gpu_keys(base)
        if GPU:
            extra["tflops"] = round(flops / 1e12, 3)
        emit(workload="gemm", threads=args.threads, batch=1, median_ms=round(med * 1e3, 3),
             samples_per_s=round(1 / med, 3), peak_rss_mb=peak_rss_mb(), steps=samples_n, n=n,
             gflops=round(flops / 1e9, 3), lib="torch" if GPU else args.lib, **extra)


def main():
    if args.workload == "gemm":
        run_gemm()
        return
    reset_peak_rss()
    base = reset_peak_gpu()
    step, batch, n, warm = build(args.workload)
    n, warm = args.steps or n, args.warmup or warm
    for _ in range(warm):
        step()
    sync()
    wall = []
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        sync()
        wall.append(time.perf_counter() - t0)
    med = statistics.median(wall)
    emit(workload=args.workload, threads=args.threads, batch=batch, median_ms=round(med * 1e3, 3),
         samples_per_s=round(batch / med, 3), peak_rss_mb=peak_rss_mb(), steps=n,
         omp_wait=args.omp_wait, **gpu_keys(base))


main()
