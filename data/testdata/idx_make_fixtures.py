#!/usr/bin/python3
"""Write the small idx fixtures used by data/idx_test.go.

Standard library only (struct, gzip), as an implementation of the idx
format independent of the Go code:

    /usr/bin/python3 data/testdata/idx_make_fixtures.py

The Go tests hard-code the same values.
"""

import gzip
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

# type code -> (struct format character, element size)
TYPES = {0x08: "B", 0x09: "b", 0x0B: "h", 0x0C: "i", 0x0D: "f", 0x0E: "d"}


def encode(type_code, dims, values):
    fmt = TYPES[type_code]
    out = bytes([0, 0, type_code, len(dims)])
    out += struct.pack(f">{len(dims)}I", *dims)
    out += struct.pack(f">{len(values)}{fmt}", *values)
    return out


def write(name, blob, compress=False):
    path = os.path.join(HERE, name)
    if compress:
        # mtime=0 keeps the output reproducible.
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
            f.write(blob)
    else:
        with open(path, "wb") as f:
            f.write(blob)
    print(f"wrote {name} ({os.path.getsize(path)} bytes)")


def main():
    # Three 4x4 "images": pixel k of image n is (n*16 + k) * 5 mod 256.
    images = [((n * 16 + k) * 5) % 256 for n in range(3) for k in range(16)]
    write("idx_images-idx3-ubyte.gz", encode(0x08, [3, 4, 4], images), compress=True)
    write("idx_labels-idx1-ubyte", encode(0x08, [3], [7, 2, 1]))
    write("idx_double.idx", encode(0x0E, [2, 2], [1.5, -2.25, 0.1, 1e10]))
    write("idx_short.idx", encode(0x0B, [4], [-32768, -1, 0, 32767]))


if __name__ == "__main__":
    main()
