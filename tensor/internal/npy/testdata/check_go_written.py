#!/usr/bin/python3
"""Check that numpy loads .npy files written by the Go package correctly.

Usage: /usr/bin/python3 check_go_written.py DIR

DIR must hold a file for every name in make_fixtures.fixtures(), written
by Go with the same values, little-endian and in C order. Each file is
loaded with np.load(allow_pickle=False) and compared bit-exactly with the
expected array. Prints "OK" on success and exits non-zero on a mismatch.
"""

import os
import sys

import numpy as np

# Importing the fixture module must not litter testdata with __pycache__.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_fixtures import fixtures  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_go_written.py DIR")
    failed = False
    for name, (want, _) in fixtures().items():
        got = np.load(os.path.join(sys.argv[1], name), allow_pickle=False)
        want_dtype = want.dtype.newbyteorder("<")
        ok = (
            got.dtype == want_dtype
            and got.dtype.str == want_dtype.str
            and got.shape == want.shape
            and got.flags.c_contiguous
            and got.tobytes() == np.ascontiguousarray(want, dtype=want_dtype).tobytes()
        )
        print(f"{name}: {got.dtype.str} {got.shape} {'ok' if ok else 'MISMATCH'}")
        if not ok:
            print(f"  got  {got!r}\n  want {want!r}")
            failed = True
    if failed:
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
