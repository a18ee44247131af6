"""Lists the ONNX backend node tests (libonnx-testdata) whose ops are all in the importer's target list and
whose tensors are all float32/float16/bfloat16/int32/int64/bool, less EXCLUDED: the set docs/CONFORMANCE.md
counts.

Usage: /usr/bin/python3 select_node_tests.py [NODE_DIR] > dirs.txt
"""
import os
import sys

import onnx

OPS = set("""Abs Add ArgMax ArgMin AveragePool BatchNormalization Cast CastLike Ceil Clip Concat Constant
ConstantOfShape Conv ConvTranspose CumSum DepthToSpace Div Dropout Equal Erf Exp Expand EyeLike Flatten Floor
Gather GatherElements GatherND Gemm GlobalAveragePool GlobalMaxPool Greater HardSigmoid HardSwish Hardmax Identity
LayerNormalization LeakyRelu Less Log LogSoftmax MatMul Max MaxPool Mean Min Mod Mul Neg
NegativeLogLikelihoodLoss OneHot Pad Pow Range Reciprocal ReduceMax ReduceMean ReduceProd ReduceSum Relu Reshape
Resize Round Scatter ScatterElements Shape Sigmoid Sign Slice Softmax SoftmaxCrossEntropyLoss Softplus
SpaceToDepth Split Sqrt Squeeze Sub Sum Tanh Tile Transpose Unsqueeze Upsample Where""".split())
DTYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.INT32, onnx.TensorProto.INT64, onnx.TensorProto.BOOL,
          onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}

# Tests whose expected data contradict the behaviour spire keeps on purpose, with the reason.
EXCLUDED = {
    # ONNX 1.12's data truncate float to bfloat16; spire rounds to nearest even, as PyTorch does and as later
    # ONNX versions specify (a truncated value is up to one bfloat16 unit off).
    "test_cast_FLOAT_to_BFLOAT16",
    "test_castlike_FLOAT_to_BFLOAT16",
    "test_castlike_FLOAT_to_BFLOAT16_expanded",
}

root = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/libonnx-testdata/data/node"
for name in sorted(os.listdir(root)):
    if name in EXCLUDED:
        continue
    d = os.path.join(root, name)
    try:
        m = onnx.load(os.path.join(d, "model.onnx"))
    except Exception:
        continue
    if not all(n.op_type in OPS and n.domain in ("", "ai.onnx") for n in m.graph.node):
        continue
    ok = True
    for v in list(m.graph.input) + list(m.graph.output):
        if not v.type.HasField("tensor_type") or v.type.tensor_type.elem_type not in DTYPES:
            ok = False
    if ok:
        print(d)
