#!/usr/bin/python3
"""Write the NumPy-produced .npy fixtures used by the Go tests.

Run with Debian's interpreter (standard library plus numpy):

    /usr/bin/python3 tensor/internal/npy/testdata/make_fixtures.py

Every fixture is listed by fixtures() with the format version it is saved
with. The Go tests hard-code the same values; check_go_written.py reuses
fixtures() to verify files written by the Go package.
"""

import os

import numpy as np
from numpy.lib import format as npformat


def fixtures():
    """Return {file name: (array, format version or None for np.save)}."""
    return {
        # A plain C-order float32 matrix.
        "f32_2x3.npy": (np.array([[-2.0, -0.5, 1.0], [2.5, 4.0, 5.5]], dtype="<f4"), None),
        # A 0-d float64 scalar.
        "f64_scalar.npy": (np.array(3.141592653589793, dtype="<f8"), None),
        # A 1-d int64 vector with extreme values.
        "i64_1d.npy": (
            np.array([-(1 << 63), -1, 0, 1, (1 << 63) - 1, 1 << 40], dtype="<i8"),
            None,
        ),
        # A 2-d bool matrix.
        "bool_2x3.npy": (np.array([[True, False, True], [False, False, True]]), None),
        # A Fortran-ordered 3-d float32 array holding 0..23 in C order.
        "f32_fortran.npy": (np.asfortranarray(np.arange(24, dtype="<f4").reshape(2, 3, 4)), None),
        # A big-endian float64 matrix.
        "f8_bigendian.npy": (np.array([[1.5, -2.25], [1e-300, np.inf]], dtype=">f8"), None),
        # A big-endian int32 vector.
        "i4_bigendian.npy": (np.array([1, -2, 65536, -(1 << 31)], dtype=">i4"), None),
        # float16, int16 and int8 vectors.
        "f2_1d.npy": (np.array([1.0, -2.0, 0.5, 65504.0], dtype="<f2"), None),
        "i2_1d.npy": (np.array([-32768, 0, 32767], dtype="<i2"), None),
        "i1_1d.npy": (np.array([-128, 0, 127], dtype="|i1"), None),
        # Version 2.0 and 3.0 headers.
        "u1_v2.npy": (np.array([[0, 1], [254, 255]], dtype="|u1"), (2, 0)),
        "i4_v3.npy": (np.array([7, -7], dtype="<i4"), (3, 0)),
        # An empty array.
        "f4_empty.npy": (np.zeros((0, 3), dtype="<f4"), None),
    }


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for name, (arr, version) in fixtures().items():
        path = os.path.join(here, name)
        if version is None:
            np.save(path, arr, allow_pickle=False)
        else:
            with open(path, "wb") as f:
                npformat.write_array(f, arr, version=version, allow_pickle=False)
        print(f"wrote {name}: {arr.dtype.str} {arr.shape}")


if __name__ == "__main__":
    main()
