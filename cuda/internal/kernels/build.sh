#!/bin/sh
# Compiles every .cu in this folder to PTX (compute_80), the files kernels.go
# embeds. Needs nvcc (Debian: nvidia-cuda-toolkit from non-free).
set -eu
cd "$(dirname "$0")"
for cu in *.cu; do
  nvcc -std=c++17 -O3 -arch=compute_80 --ptx -o "${cu%.cu}.ptx" "$cu"
done
