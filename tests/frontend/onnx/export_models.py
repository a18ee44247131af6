"""Exports the ONNX models and reference data the ONNX tests use, into the folder given as argv[1].

Run at test setup (a ctest fixture) with Debian's /usr/bin/python3 (python3-torch, python3-onnx). Nothing is
downloaded: weights come from torch.manual_seed. For each model NAME it writes NAME.onnx, NAME.in.safetensors
(the inputs, by ONNX input name) and NAME.torch.safetensors (PyTorch's own outputs, by ONNX output name).
It also writes the malformed and unsupported models the error tests load.
"""
import copy
import os
import sys

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper
import torch
import torchvision

# One safetensors reader/writer for every Python script of the repository.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools", "gpu"))
from safetensors_io import Bf16Bits, write_safetensors  # noqa: E402

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)

def export(name, model, inputs, input_names, dynamic_batch=False, opset=13, fold=True):
    model.eval()
    path = os.path.join(OUT, name + ".onnx")
    dyn = {n: {0: "batch"} for n in input_names + ["y"]} if dynamic_batch else None
    torch.onnx.export(model, tuple(inputs), path, opset_version=opset, input_names=input_names, output_names=["y"],
                      dynamic_axes=dyn, do_constant_folding=fold,
                      # PRESERVE (the model is in eval mode) keeps BatchNormalization nodes that EVAL would
                      # fuse into the convolution.
                      training=torch.onnx.TrainingMode.EVAL if fold else torch.onnx.TrainingMode.PRESERVE)
    with torch.no_grad():
        y = model(*inputs)
    write_safetensors(os.path.join(OUT, name + ".in.safetensors"), {n: x.numpy() for n, x in zip(input_names, inputs)})
    write_safetensors(os.path.join(OUT, name + ".torch.safetensors"), {"y": y.numpy()})


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        h = self.pool(torch.relu(self.conv(x)))
        # x.view(x.size(0), -1) exports the Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain the
        # importer folds.
        return self.fc(h.view(h.size(0), -1))


class MixedOps(torch.nn.Module):
    """BatchNormalization kept as a node (no constant folding), HardSwish (HardSigmoid before opset 14),
    GlobalAveragePool, Flatten, Gemm, LayerNorm, LeakyRelu, Unsqueeze/Squeeze, LogSoftmax and Clip, whose
    ONNX forms change across opsets 11..17."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4)
        self.fc, self.ln = torch.nn.Linear(4, 5), torch.nn.LayerNorm(5)
        self.bn.running_mean.uniform_(-1, 1)
        self.bn.running_var.uniform_(0.5, 2)

    def forward(self, x):
        h = torch.nn.functional.hardswish(self.bn(self.conv(x)))
        h = torch.nn.functional.adaptive_avg_pool2d(h, 1).flatten(1)
        h = torch.nn.functional.leaky_relu(self.ln(self.fc(h)), 0.1)
        return torch.log_softmax(h.unsqueeze(1).squeeze(1), dim=1) * torch.clamp(h, -0.5, 0.5)


class AttentionBlock(torch.nn.Module):
    """Single-head self-attention and a GELU MLP, each with a LayerNorm: MatMul, Transpose, Div, Softmax,
    LayerNormalization (opset 17) or its decomposition (ReduceMean, Pow, Sqrt at opset 13), and Erf."""

    def __init__(self, d=16):
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(d, d) for _ in range(3))
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 32), torch.nn.GELU(), torch.nn.Linear(32, d))
        self.scale = d ** -0.5

    def forward(self, x):
        h = self.ln1(x)
        a = torch.softmax(self.q(h) @ self.k(h).transpose(-2, -1) * self.scale, dim=-1)
        x = x + a @ self.v(h)
        return x + self.mlp(self.ln2(x))


torch.manual_seed(0)
mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.Tanh(),
                          torch.nn.Linear(32, 4), torch.nn.Softmax(dim=-1))
export("mlp", mlp, [torch.randn(5, 16)], ["x"], dynamic_batch=True)
export("cnn", Cnn(), [torch.randn(2, 3, 16, 16)], ["x"], dynamic_batch=True)
export("attention13", AttentionBlock(), [torch.randn(2, 8, 16)], ["x"])
torch.manual_seed(1)
export("attention17", AttentionBlock(), [torch.randn(2, 8, 16)], ["x"], opset=17)
for opset in (11, 13, 15, 17):
    torch.manual_seed(2)
    export(f"mixed{opset}", MixedOps(), [torch.randn(2, 3, 8, 8)], ["x"], opset=opset, fold=False)
resnet = torchvision.models.resnet18()
export("resnet18", resnet, [torch.randn(1, 3, 224, 224)], ["x"])
# A small input for the training test (tests/frontend/onnx/onnx_training_test.cpp): its backward graph runs on every
# device and on the float64 evaluator.
torch.manual_seed(6)
export("resnet18_small", torchvision.models.resnet18(), [torch.randn(2, 3, 32, 32)], ["x"])
torch.manual_seed(3)
export("mobilenet_v2", torchvision.models.mobilenet_v2(), [torch.randn(1, 3, 224, 224)], ["x"])


class SeedLeNet(torch.nn.Module):
    """The seed article's LeNet: padding=2 on both convolutions, so the first linear layer is 784 -> 120."""

    def __init__(self):
        super().__init__()
        self.convnet = torch.nn.Sequential(
            torch.nn.Conv2d(1, 6, kernel_size=5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(kernel_size=2, stride=2),
            torch.nn.Conv2d(6, 16, kernel_size=5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(kernel_size=2, stride=2))
        self.fc = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16 * 7 * 7, 120), torch.nn.ReLU(),
                                      torch.nn.Linear(120, 84), torch.nn.ReLU(), torch.nn.Linear(84, 10))

    def forward(self, x):
        return self.fc(self.convnet(x))


torch.manual_seed(4)
export("lenet", SeedLeNet(), [torch.randn(4, 1, 28, 28)], ["x"], dynamic_batch=True)
# PyTorch's own encoder layer, at both opsets the issue names (13 decomposes LayerNorm; 17 has the op).
for opset in (13, 17):
    torch.manual_seed(5)
    layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True)
    # Fresh LayerNorms (ones and zeros) and zero attention biases are identical tensors the exporter merges;
    # random ones keep every parameter its own initializer, as in a trained model.
    with torch.no_grad():
        for p in (layer.norm1.weight, layer.norm2.weight):
            p.uniform_(0.5, 1.5)
        for p in (layer.norm1.bias, layer.norm2.bias, layer.self_attn.in_proj_bias, layer.self_attn.out_proj.bias):
            p.uniform_(-0.1, 0.1)
    export(f"encoder{opset}", layer, [torch.randn(2, 10, 128)], ["x"], opset=opset)



class TinyUNet(torch.nn.Module):
    """A UNet-style segmentation net: two encoder levels and a bottleneck, up through a ConvTranspose (2x2, stride 2)
    and a bilinear Resize, each joined to its skip by Concat, then a 1x1 head of per-pixel class scores."""

    def __init__(self, classes=3):
        super().__init__()

        def block(i, o):
            return torch.nn.Sequential(torch.nn.Conv2d(i, o, 3, padding=1), torch.nn.BatchNorm2d(o), torch.nn.ReLU())
        self.enc1, self.enc2, self.mid = block(3, 8), block(8, 16), block(16, 32)
        self.up2 = torch.nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.dec2 = block(32, 16)
        self.up1 = torch.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.dec1 = block(16 + 8, 8)
        self.head = torch.nn.Conv2d(8, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(torch.nn.functional.max_pool2d(e1, 2))
        m = self.mid(torch.nn.functional.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
        return self.head(d1)


class LstmTagger(torch.nn.Module):
    """A sequence model: two stacked bidirectional LSTM layers (ONNX LSTM nodes, forward and reverse) over a batch of
    sequences, then a linear layer on every step's output."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(input_size=8, hidden_size=16, num_layers=2, batch_first=True, bidirectional=True)
        self.fc = torch.nn.Linear(32, 5)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out)


class TinyDetector(torch.nn.Module):
    """A small single-stage detector: a strided conv backbone, a nearest-neighbour Resize neck, and a head that scores
    every cell and regresses its box; the k best cells by score (TopK) with their boxes (GatherElements at TopK's
    indices), as [batch, k, 1 + 4]."""

    def __init__(self, k=20):
        super().__init__()
        self.k = k
        self.backbone = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.ReLU(),
                                            torch.nn.Conv2d(8, 16, 3, stride=2, padding=1), torch.nn.ReLU())
        self.neck = torch.nn.Sequential(torch.nn.Upsample(scale_factor=2, mode="nearest"),
                                        torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU())
        self.score, self.box = torch.nn.Conv2d(16, 1, 1), torch.nn.Conv2d(16, 4, 1)

    def forward(self, x):
        f = self.neck(self.backbone(x))
        scores = torch.sigmoid(self.score(f)).flatten(1)             # [B, cells]
        boxes = self.box(f).flatten(2).transpose(1, 2)                # [B, cells, 4]
        top, at = torch.topk(scores, self.k, dim=1)
        picked = torch.gather(boxes, 1, at.unsqueeze(-1).expand(-1, -1, 4))
        return torch.cat([top.unsqueeze(-1), picked], -1)


torch.manual_seed(7)
unet = TinyUNet()
with torch.no_grad():  # running statistics of a trained net, so that the folded BatchNorms are not the identity
    for m in unet.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2)
export("unet", unet, [torch.randn(1, 3, 32, 32)], ["x"])
torch.manual_seed(8)
export("lstm", LstmTagger(), [torch.randn(2, 12, 8)], ["x"])
torch.manual_seed(9)
export("detector", TinyDetector(), [torch.randn(1, 3, 32, 32)], ["x"])

# The same MLP with its weights in an external data file (data_location EXTERNAL).
m = onnx.load(os.path.join(OUT, "mlp.onnx"))
onnx.save_model(m, os.path.join(OUT, "mlp_ext.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                location="mlp_ext.weights", size_threshold=0)
# ... and one whose external data file is missing.
m = onnx.load(os.path.join(OUT, "mlp.onnx"))
onnx.save_model(m, os.path.join(OUT, "mlp_noext.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                location="mlp_noext.weights", size_threshold=0)
os.remove(os.path.join(OUT, "mlp_noext.weights"))

# The MLP in half precision: float16 and bfloat16 initializers, input and output (ONNX's FLOAT16 and BFLOAT16
# tensors). PyTorch's reference: bf16 natively (its CPU kernels compute in f32 and round each op's result, as
# spire does); f16 has no CPU matmul in PyTorch, so the f32 model on f16-rounded weights and input, the result
# rounded to f16.
def bf16_bits(t):
    return Bf16Bits(t.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16))


def half_mlp(half):
    elem = onnx.TensorProto.FLOAT16 if half == "f16" else onnx.TensorProto.BFLOAT16
    m = onnx.load(os.path.join(OUT, "mlp.onnx"))
    for init in m.graph.initializer:
        a = onnx.numpy_helper.to_array(init)
        if half == "f16":
            init.CopyFrom(onnx.numpy_helper.from_array(a.astype(np.float16), init.name))
        else:
            init.CopyFrom(oh.make_tensor(init.name, elem, a.shape, bf16_bits(torch.from_numpy(a.copy())).bits.tobytes(),
                                         raw=True))
    for vi in list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info):
        vi.type.tensor_type.elem_type = elem
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, f"mlp_{half}.onnx"))
    torch.manual_seed(6)
    x = torch.randn(5, 16)
    with torch.no_grad():
        if half == "bf16":
            y = copy.deepcopy(mlp).to(torch.bfloat16)(x.to(torch.bfloat16))
            inputs, outputs = {"x": bf16_bits(x)}, {"y": bf16_bits(y)}
        else:
            rounded = copy.deepcopy(mlp)
            for p in rounded.parameters():
                p.copy_(p.half().float())
            y = rounded(x.half().float()).half()
            inputs, outputs = {"x": x.half().numpy()}, {"y": y.numpy()}
    write_safetensors(os.path.join(OUT, f"mlp_{half}.in.safetensors"), inputs)
    write_safetensors(os.path.join(OUT, f"mlp_{half}.torch.safetensors"), outputs)


half_mlp("f16")
half_mlp("bf16")


class LossClassifier(torch.nn.Module):
    """An MLP classifier that returns its own loss, for training the imported model (onnx_loss_training_test.cpp):
    cross_entropy (SoftmaxCrossEntropyLoss at opset 13) or nll_loss with class weights of log(softmax) (the exporter
    would fuse log_softmax and nll_loss into SoftmaxCrossEntropyLoss; this stays NegativeLogLikelihoodLoss)."""

    def __init__(self, nll):
        super().__init__()
        self.nll = nll
        self.l1 = torch.nn.Linear(12, 24)
        self.l2 = torch.nn.Linear(24, 5)
        self.register_buffer("class_weight", torch.tensor([1.0, 0.5, 2.0, 1.5, 0.75]))

    def forward(self, x, target):
        logits = self.l2(torch.relu(self.l1(x)))
        if self.nll:
            return torch.nn.functional.nll_loss(torch.log(torch.softmax(logits, 1)), target, weight=self.class_weight)
        return torch.nn.functional.cross_entropy(logits, target)


# PyTorch's training of it: torch.optim.SGD (lr 0.5, momentum 0.9), 6 steps on one batch of 8 (so the loss falls);
# the batch and the loss of each step (before its update) go to NAME.train.safetensors.
def loss_training(name, nll):
    torch.manual_seed(20 + nll)
    m = LossClassifier(nll)
    x, target = torch.randn(8, 12), torch.randint(0, 5, (8,))
    export(name, copy.deepcopy(m), [x, target], ["x", "target"])
    opt = torch.optim.SGD(m.parameters(), lr=0.5, momentum=0.9)
    losses = []
    for _ in range(6):
        opt.zero_grad()
        loss = m(x, target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    write_safetensors(os.path.join(OUT, name + ".train.safetensors"),
                      {"x": x.numpy(), "target": target.numpy(), "losses": np.array(losses, np.float32)})


loss_training("classifier_ce", False)
loss_training("classifier_nll", True)

# Malformed files: not ONNX at all, and a model cut in half.
with open(os.path.join(OUT, "garbage.onnx"), "wb") as f:
    f.write(b"this is not an ONNX model\x00\xff\xfe" * 10)
with open(os.path.join(OUT, "cnn.onnx"), "rb") as f:
    data = f.read()
with open(os.path.join(OUT, "truncated.onnx"), "wb") as f:
    f.write(data[: len(data) // 2])

# An op spire does not map (RandomNormalLike, a valid ONNX op: random, so never a deterministic import).
node = oh.make_node("RandomNormalLike", ["x"], ["y"], name="the_random")
g = oh.make_graph([node], "unsupported", [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 3])],
                  [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [3, 3])])
onnx.save(oh.make_model(g, opset_imports=[oh.make_opsetid("", 13)]), os.path.join(OUT, "unsupported.onnx"))

write_safetensors(os.path.join(OUT, "unsupported.in.safetensors"), {"x": np.eye(3, dtype=np.float32)})
# Inputs with a wrong shape and with a missing tensor.
write_safetensors(os.path.join(OUT, "cnn.wrongshape.safetensors"), {"x": np.zeros((2, 3, 15, 16), np.float32)})
write_safetensors(os.path.join(OUT, "cnn.wrongname.safetensors"), {"image": np.zeros((2, 3, 16, 16), np.float32)})
write_safetensors(os.path.join(OUT, "cnn.wrongdtype.safetensors"), {"x": np.zeros((2, 3, 16, 16), np.float64)})
print("exported into", OUT)
