"""A small ONNX model whose output is a sequence, built with onnx.helper
(torch.onnx.export does not emit sequence outputs for plain modules), for
the onnx package's RunValues example.

Writes onnx/testdata/values/split_sequence.onnx: x [N, 4] float is
split along axis 0 into chunks of two rows (SplitToSequence), and the graph
returns the chunks as a sequence and their count (SequenceLength).
"""

import os

import onnx
from onnx import TensorProto, helper

from golden import ROOT

OUT = os.path.join(ROOT, "onnx", "testdata", "values")


def main():
    two = helper.make_tensor("two", TensorProto.INT64, [], [2])
    graph = helper.make_graph(
        [
            helper.make_node("SplitToSequence", ["x", "two"], ["chunks"], axis=0),
            helper.make_node("SequenceLength", ["chunks"], ["count"]),
        ],
        "split_sequence",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [
            helper.make_tensor_sequence_value_info("chunks", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("count", TensorProto.INT64, []),
        ],
        initializer=[two],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="gen_onnx_sequences.py")
    model.ir_version = 7
    onnx.checker.check_model(model)
    os.makedirs(OUT, exist_ok=True)
    onnx.save(model, os.path.join(OUT, "split_sequence.onnx"))


if __name__ == "__main__":
    main()
