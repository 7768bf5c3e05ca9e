"""Minimal safetensors reader and writer for the nn interop scripts.

Standard library (json, struct) plus torch only; the `safetensors` Python
package is deliberately not used, so these files test Ember against an
independent implementation of the format. Little-endian hosts only.
"""

import json
import struct
import sys

import torch

DTYPES = {
    torch.float64: "F64",
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.bool: "BOOL",
}
NAMES = {v: k for k, v in DTYPES.items()}


def _check_host():
    if sys.byteorder != "little":
        raise SystemExit("safetensors_io assumes a little-endian host")


def save(path, tensors, metadata=None):
    """Write a dict name -> tensor as a safetensors file."""
    _check_host()
    header = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    chunks, offset = [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        flat = t.reshape(-1)
        b = bytes(flat.view(torch.uint8).tolist()) if flat.numel() else b""
        header[name] = {
            "dtype": DTYPES[t.dtype],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(b)],
        }
        chunks.append(b)
        offset += len(b)
    hdr = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hdr += b" " * (-len(hdr) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)))
        f.write(hdr)
        for b in chunks:
            f.write(b)


def load(path):
    """Read a safetensors file; returns (dict name -> tensor, metadata)."""
    _check_host()
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    buf = data[8 + n :]
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = NAMES[info["dtype"]]
        raw = bytearray(buf[begin:end])
        if raw:
            t = torch.frombuffer(raw, dtype=dtype)
        else:
            t = torch.zeros(0, dtype=dtype)
        out[name] = t.reshape(info["shape"]).clone()
    return out, meta
