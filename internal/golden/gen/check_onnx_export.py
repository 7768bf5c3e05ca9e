#!/usr/bin/env python3
"""Check ONNX files written by Ember's onnx.Export with the ONNX project's
own checker (Debian's python3-onnx): structure, operator schemas and full
shape inference. Usage: check_onnx_export.py FILE.onnx [...]; exits non-zero
with the checker's message on the first invalid file."""
import sys

import onnx


def main(paths):
    for path in paths:
        model = onnx.load(path)
        onnx.checker.check_model(model, full_check=True)
        # Shape inference in strict mode catches type and rank mismatches
        # between nodes that the structural check accepts.
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        print(f"{path}: ok (opset {model.opset_import[0].version}, {len(model.graph.node)} nodes)")


if __name__ == "__main__":
    main(sys.argv[1:])
