#!/usr/bin/python3
"""Verify a safetensors file against the tensors of make_fixture.expected().

Usage: /usr/bin/python3 check_file.py FILE [KEY=VALUE ...]

The file is parsed with the standard library (struct, json) and the tensor
bytes are turned into tensors with torch.frombuffer; the `safetensors`
package is not used. Each KEY=VALUE argument must appear in the file's
__metadata__. The script checks the header's 8-byte alignment, that the
byte buffer is covered exactly, and that every expected tensor is present
with the expected dtype, shape and bit-exact values. It exits non-zero with
a message on the first mismatch and prints "OK" otherwise.
"""

import json
import os
import struct
import sys

import torch

# Importing the fixture module must not litter testdata with __pycache__.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_fixture import DTYPES, expected  # noqa: E402

NAME_TO_DTYPE = {v: k for k, v in DTYPES.items()}

# Integer dtypes of the same width, for bit-exact float comparison.
BITS = {
    torch.float64: torch.int64,
    torch.float32: torch.int32,
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
}


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def decode(blob):
    if len(blob) < 8:
        fail("file shorter than 8 bytes")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        fail(f"header length {n} exceeds file")
    if n % 8 != 0:
        fail(f"header length {n} is not a multiple of 8")
    header = json.loads(blob[8 : 8 + n].decode("utf-8"))
    data = blob[8 + n :]
    metadata = header.pop("__metadata__", None)
    spans = sorted((info["data_offsets"][0], info["data_offsets"][1]) for info in header.values())
    pos = 0
    for begin, end in spans:
        if begin != pos or end < begin:
            fail(f"buffer not covered exactly at {pos}: next span [{begin}, {end}]")
        pos = end
    if pos != len(data):
        fail(f"tensors cover {pos} of {len(data)} buffer bytes")
    tensors = {}
    for name, info in header.items():
        dtype = NAME_TO_DTYPE.get(info["dtype"])
        if dtype is None:
            fail(f"{name}: unknown dtype {info['dtype']}")
        begin, end = info["data_offsets"]
        shape = info["shape"]
        if end == begin:
            t = torch.empty(shape, dtype=dtype)
        else:
            t = torch.frombuffer(bytearray(data[begin:end]), dtype=dtype).reshape(shape)
        tensors[name] = t
    return tensors, metadata


def same(a, b):
    if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
        return False
    if a.dtype in BITS:
        return torch.equal(a.view(BITS[a.dtype]), b.view(BITS[b.dtype]))
    return torch.equal(a, b)


def main():
    if len(sys.argv) < 2:
        fail("usage: check_file.py FILE [KEY=VALUE ...]")
    with open(sys.argv[1], "rb") as f:
        tensors, metadata = decode(f.read())
    for arg in sys.argv[2:]:
        key, _, value = arg.partition("=")
        if (metadata or {}).get(key) != value:
            fail(f"metadata {key!r}: got {(metadata or {}).get(key)!r}, want {value!r}")
    want = expected()
    if set(tensors) != set(want):
        fail(f"tensor names {sorted(tensors)}, want {sorted(want)}")
    for name, w in want.items():
        got = tensors[name]
        if not same(got, w):
            fail(f"{name}: got {got.dtype} {tuple(got.shape)} {got}, want {w.dtype} {tuple(w.shape)} {w}")
        print(f"{name}: {got.dtype} {tuple(got.shape)} ok")
    print("OK")


if __name__ == "__main__":
    main()
