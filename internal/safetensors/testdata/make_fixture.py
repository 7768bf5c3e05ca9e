#!/usr/bin/python3
"""Write torch_written.safetensors, the PyTorch-produced interop fixture.

The safetensors format is written here by hand with the standard library
(json, struct); torch only supplies the tensors and their raw bytes. The
`safetensors` Python package is deliberately not used, so the fixture is an
independent implementation of the spec.

Run from anywhere with Debian's interpreter:

    /usr/bin/python3 internal/safetensors/testdata/make_fixture.py

The Go tests (and check_file.py) expect exactly the tensors returned by
expected() below, and the metadata in METADATA.
"""

import json
import os
import struct
import sys

import torch

METADATA = {"format": "pt", "source": "make_fixture.py"}

# torch dtype -> safetensors dtype name.
DTYPES = {
    torch.float64: "F64",
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}


def expected():
    """Return the fixture's tensors by name. Keep in sync with the Go tests."""
    return {
        "f32": torch.tensor([[0.5, -1.25, 3.0], [1024.0, 65504.0, -7.75]], dtype=torch.float32),
        "f64": torch.tensor([1.0 / 3.0, 3.141592653589793, -2.5, 1e300], dtype=torch.float64),
        "f16": torch.tensor([[1.0, -2.0], [0.5, 65504.0]], dtype=torch.float16),
        "bf16": torch.tensor([1.0, -2.0, 3.140625], dtype=torch.bfloat16),
        "i64": torch.tensor([-1, 0, 1 << 40, 9223372036854775807], dtype=torch.int64),
        "i32": torch.tensor([[-2147483648, 2147483647], [0, 42]], dtype=torch.int32),
        "bool": torch.tensor([True, False, False, True], dtype=torch.bool),
        "scalar": torch.tensor(2.5, dtype=torch.float32),
        "empty": torch.zeros((0, 3), dtype=torch.float32),
    }


def tensor_bytes(t):
    """Raw little-endian, row-major bytes of t (standard library only)."""
    flat = t.contiguous().reshape(-1)
    if flat.numel() == 0:
        return b""
    return bytes(flat.view(torch.uint8).tolist())


def encode(tensors, metadata, order=None):
    """Serialize tensors in safetensors format.

    order gives the layout order of the byte buffer (defaults to sorted
    names); the header lists entries in the dict's insertion order.
    """
    if sys.byteorder != "little":
        raise SystemExit("this script assumes a little-endian host")
    order = order or sorted(tensors)
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    chunks = []
    offset = 0
    spans = {}
    for name in order:
        b = tensor_bytes(tensors[name])
        spans[name] = (offset, offset + len(b))
        chunks.append(b)
        offset += len(b)
    for name, t in tensors.items():
        header[name] = {
            "dtype": DTYPES[t.dtype],
            "shape": list(t.shape),
            "data_offsets": list(spans[name]),
        }
    hdr = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hdr += b" " * (-len(hdr) % 8)
    return struct.pack("<Q", len(hdr)) + hdr + b"".join(chunks)


def main():
    tensors = expected()
    # Lay the buffer out in reverse-sorted order so that readers cannot rely
    # on the header order matching the data order.
    blob = encode(tensors, METADATA, order=sorted(tensors, reverse=True))
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_written.safetensors")
    with open(out, "wb") as f:
        f.write(blob)
    print(f"wrote {out} ({len(blob)} bytes)")


if __name__ == "__main__":
    main()
