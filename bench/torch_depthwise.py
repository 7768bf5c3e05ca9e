"""Times PyTorch's float32 depthwise convolution on the shapes of
BenchmarkDepthwise (tensor/internal/cpu): MobileNetV2's 3x3 padding-1 layers,
batch 1, one thread; forward, input gradient and weight gradient apart
(aten.convolution_backward with one output selected), in GMAC/s.

usage (from the repository root):
    /usr/bin/python3 bench/torch_depthwise.py [-repeats 7] [-seconds 0.2]

Each line reads like the Go benchmark's sub-benchmark name and its medians
over the repeats of GMAC per wall second and per process CPU second (the
steadier one on a busy machine), so the two can be set side by side:
    fwd/c32_112_s1 <GMAC/s> <GMAC/cpu-s>
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F

SHAPES = [(32, 112, 1), (96, 112, 2), (144, 56, 1), (192, 28, 1), (576, 14, 1), (960, 7, 1)]


def rate(fn, macs, seconds):
    """GMAC per wall and per CPU second of fn over at least `seconds` of
    calls after one warm-up."""
    fn()
    n, t0, c0 = 0, time.perf_counter(), time.process_time()
    while True:
        fn()
        n += 1
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return macs * n / dt / 1e9, macs * n / (time.process_time() - c0) / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-repeats", type=int, default=7)
    ap.add_argument("-seconds", type=float, default=0.2)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    for c, hw, stride in SHAPES:
        x = torch.randn(1, c, hw, hw)
        w = torch.randn(c, 1, 3, 3)
        y = F.conv2d(x, w, stride=stride, padding=1, groups=c)
        gy = torch.randn_like(y)
        macs = c * 9 * y.shape[2] * y.shape[3]

        def backward(mask):
            return lambda: torch.ops.aten.convolution_backward(
                gy, x, w, None, [stride, stride], [1, 1], [1, 1], False, [0, 0], c, mask)

        passes = [
            ("fwd", lambda: F.conv2d(x, w, stride=stride, padding=1, groups=c)),
            ("dx", backward([True, False, False])),
            ("dw", backward([False, True, False])),
        ]
        with torch.no_grad():
            for name, fn in passes:
                rates = [rate(fn, macs, args.seconds) for _ in range(args.repeats)]
                wall = statistics.median(r[0] for r in rates)
                cpu = statistics.median(r[1] for r in rates)
                print(f"{name}/c{c}_{hw}_s{stride} {wall:.3f} {cpu:.3f}", flush=True)


if __name__ == "__main__":
    main()
