"""Lists ONNX backend node tests (libonnx-testdata), one folder a line: the sets docs/CONFORMANCE.md counts.

  --set targeted (the default): the tests whose ops are all in the importer's target list and whose tensors are all
      float32/float16/bfloat16/int32/int64/bool, less EXCLUDED.
  --set typed: every test whose graph inputs and outputs are all float32, int32, int64 or bool tensors, whatever
      its ops (788 of ONNX 1.12's 932): the bar of issue 52. Nothing is excluded; a test spire cannot run must be
      refused, never answered wrong.
  --set all: every test folder with a model.

Usage: /usr/bin/python3 select_node_tests.py [--set targeted|typed|all] [NODE_DIR] > dirs.txt
"""
import argparse
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

# Tests of the typed set whose expected data contradict their own model, with the reason. They stay in the set and
# count as failures; run_node_tests.sh does not take their mismatch for a wrong result of spire's (--contradicted
# lists them).
CONTRADICTED = {
    # ONNX 1.12's backend/test/case/node/adam.py computes the expected outputs with epsilon=1e-2 but leaves the
    # node's epsilon attribute at its default, 1e-6 (spire follows the node: X1_new 0.75596 instead of 0.75914).
    "test_adam_multiple",
    # The indices [5, 7, 13, 15] are flat positions of a 4x4 output, which the expected data place there and then pad
    # to output_shape's 5x5; ONNX defines them as flat positions of the output (its later reference implementation
    # writes Y.flat[I] = X in the 5x5), which spire follows: 5 lands at (1, 0), not (1, 1).
    "test_maxunpool_export_with_output_shape",
}

# The element types of the typed set.
TYPED_DTYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.INT32, onnx.TensorProto.INT64, onnx.TensorProto.BOOL}


def tensors_of(m, dtypes):
    """Whether every graph input and output of model m is a tensor of one of dtypes."""
    return all(v.type.HasField("tensor_type") and v.type.tensor_type.elem_type in dtypes
               for v in list(m.graph.input) + list(m.graph.output))


def selected(name, m, which):
    if which == "all":
        return True
    if which == "typed":
        return tensors_of(m, TYPED_DTYPES)
    return (name not in EXCLUDED and tensors_of(m, DTYPES)
            and all(n.op_type in OPS and n.domain in ("", "ai.onnx") for n in m.graph.node))


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--set", dest="which", choices=["targeted", "typed", "all"], default="targeted")
parser.add_argument("--contradicted", action="store_true",
                    help="print only the names of the tests whose expected data contradict their model")
parser.add_argument("root", nargs="?", default="/usr/share/libonnx-testdata/data/node")
args = parser.parse_args()
if args.contradicted:
    print("\n".join(sorted(CONTRADICTED)))
    sys.exit(0)
for name in sorted(os.listdir(args.root)):
    d = os.path.join(args.root, name)
    try:
        m = onnx.load(os.path.join(d, "model.onnx"))
    except Exception:
        continue
    if selected(name, m, args.which):
        print(d)
