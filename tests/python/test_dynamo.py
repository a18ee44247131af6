"""torch.compile(model, backend="spire") on torch >= 2 (Dynamo): golden tests against eager PyTorch, fixed seeds, every
device present. Skipped on torch 1.x (Debian's 1.13 has no Dynamo); they run on the GPU machine (tools/gpu/run-torch.sh)."""
import copy
import os
import subprocess
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

dynamo = pytest.importorskip("torch._dynamo", reason="torch >= 2 (Dynamo) only")

import spire.torch  # noqa: E402
from spire.torch.dynamo_backend import compiled_pieces, pieces_made  # noqa: E402
from models import LeNet, SiluMLP, WithUnsupportedOp, rel_err, seeded, train_side_by_side  # noqa: E402

TOL = 1e-4


@pytest.fixture(autouse=True)
def fresh_dynamo():
    dynamo.reset()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    dynamo.reset()


def new_pieces(before):
    return compiled_pieces(since=before)


def eager_nodes(pieces):
    return [line for p in pieces for part in p._partitions.values() for line in part.explain().splitlines()
            if line.startswith("eager")]


def test_backend_is_registered():
    assert "spire" in dynamo.list_backends(exclude_tags=())


@pytest.mark.parametrize("name", ["lenet", "silu_mlp", "resnet18", "mobilenet_v2"])
def test_inference_matches_eager(device, name):
    torch.manual_seed(20)
    model, x = {
        "lenet": lambda: (seeded(LeNet), torch.randn(4, 1, 28, 28)),
        "silu_mlp": lambda: (seeded(SiluMLP), torch.randn(8, 128)),
        "resnet18": lambda: (seeded(torchvision.models.resnet18, num_classes=10), torch.randn(2, 3, 64, 64)),
        "mobilenet_v2": lambda: (seeded(torchvision.models.mobilenet_v2, num_classes=10), torch.randn(2, 3, 64, 64)),
    }[name]()
    model.eval()
    before = pieces_made()
    compiled = torch.compile(model, backend="spire", options={"device": device})
    with torch.no_grad():
        want = model(x)
        got = compiled(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert rel_err(got, want) <= TOL
    pieces = new_pieces(before)
    assert pieces and sum(p.compilations for p in pieces) >= 1
    if name in ("lenet", "resnet18", "silu_mlp"):
        assert eager_nodes(pieces) == []


class ResizesAndMasks(nn.Module):
    """What Dynamo records of interpolation (torch._C._nn.upsample_*), masked attention with returned weights (its
    inlining of F.multi_head_attention_forward) and scaled_dot_product_attention's masks."""
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 4, batch_first=True)

    def forward(self, x, tokens, causal, padding):
        up = (F.interpolate(x, scale_factor=1.7, mode="bilinear"), F.interpolate(x, size=(9, 4), mode="bicubic",
                                                                                  align_corners=True),
              F.interpolate(x, scale_factor=2, mode="nearest"), F.adaptive_avg_pool2d(x, (2, 3)))
        a, w = self.mha(tokens, tokens, tokens, attn_mask=causal, key_padding_mask=padding)
        q = tokens.reshape(2, 5, 4, 4).transpose(1, 2)
        s = (F.scaled_dot_product_attention(q, q, q, is_causal=True),
             F.scaled_dot_product_attention(q, q, q, attn_mask=~causal))
        return up + (a, w) + s


def test_resizes_and_masked_attention(device):
    torch.manual_seed(23)
    model = ResizesAndMasks().eval()
    causal = torch.ones(5, 5, dtype=torch.bool).triu(1)
    padding = torch.zeros(2, 5, dtype=torch.bool)
    padding[1, 3:] = True
    inputs = (torch.randn(2, 3, 5, 7), torch.randn(2, 5, 16), causal, padding)
    before = pieces_made()
    with torch.no_grad():
        want = model(*inputs)
        got = torch.compile(model, backend="spire", options={"device": device})(*inputs)
    for g, w in zip(got, want):
        assert g.shape == w.shape and rel_err(g, w) <= TOL
    assert eager_nodes(new_pieces(before)) == []


def test_graph_break_gives_two_spire_pieces(device):
    class Broken(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(16, 32), nn.Linear(32, 8)

        def forward(self, x):
            h = torch.relu(self.a(x))
            torch._dynamo.graph_break()
            return self.b(h).tanh()

    torch.manual_seed(21)
    model, x = seeded(Broken), torch.randn(5, 16)
    before = pieces_made()
    with torch.no_grad():
        got = torch.compile(model, backend="spire", options={"device": device})(x)
        assert rel_err(got, model(x)) <= TOL
    pieces = new_pieces(before)
    assert len(pieces) == 2 and all(p.compilations == 1 for p in pieces)


def test_unsupported_op_runs_eager_between_spire_segments(device):
    torch.manual_seed(22)
    model, x = seeded(WithUnsupportedOp), torch.randn(4, 16)
    before = pieces_made()
    with torch.no_grad():
        got = torch.compile(model, backend="spire", options={"device": device})(x)
        assert rel_err(got, model(x)) <= TOL
    eager = eager_nodes(new_pieces(before))
    assert eager and all("cumsum" in line for line in eager)


def test_new_batch_sizes_match_eager(device):
    # The second batch makes Dynamo recompile with a symbolic batch (SymInt inputs): spire still pads or compiles.
    torch.manual_seed(23)
    model = seeded(LeNet).eval()
    compiled = torch.compile(model, backend="spire", options={"device": device})
    with torch.no_grad():
        for batch in (4, 7, 9, 4):
            x = torch.randn(batch, 1, 28, 28)
            assert rel_err(compiled(x), model(x)) <= TOL, batch


def test_training_lenet_matches_eager(device):
    # loss.backward() through the compiled model fills .grad (spire's gradient graph of each segment); 20 SGD steps
    # give eager's losses.
    torch.manual_seed(24)
    model = seeded(LeNet, seed=24)
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend="spire", options={"device": device})
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    opt_eager = torch.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
    before = pieces_made()
    train_side_by_side(compiled, eager, (opt, opt_eager), seed=25, steps=20, tol=TOL)
    pieces = new_pieces(before)
    assert sum(p.backward_compilations for p in pieces) >= 1


def test_resnet18_gradients_match_eager(device):
    # Training mode: batch norm's batch statistics stay in eager PyTorch, convolutions and the rest run on spire. (At
    # 2 images of 32x32 the last stage's batch norm normalizes 2 values per channel, which turns float32 rounding into
    # 1e-2 gradient differences on any device: 4 images of 64x64 keep the check meaningful.)
    torch.manual_seed(26)
    model = seeded(torchvision.models.resnet18, num_classes=10)
    eager = copy.deepcopy(model)
    x, t = torch.randn(4, 3, 64, 64), torch.randint(0, 10, (4,))
    F.cross_entropy(torch.compile(model, backend="spire", options={"device": device})(x), t).backward()
    F.cross_entropy(eager(x), t).backward()
    for (name, p), (_, q) in zip(model.named_parameters(), eager.named_parameters()):
        assert p.grad is not None, name
        assert rel_err(p.grad, q.grad) <= TOL, name


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs torch's CUDA")
def test_cuda_tensors_come_back_on_cuda(device):
    torch.manual_seed(27)
    model = seeded(torchvision.models.resnet18, num_classes=10).eval().cuda()
    x = torch.randn(2, 3, 64, 64, device="cuda")
    with torch.no_grad():
        got = torch.compile(model, backend="spire", options={"device": device})(x)
        want = model(x)
    assert got.device == want.device
    assert rel_err(got, want) <= TOL


def test_unknown_option_is_refused():
    with pytest.raises(Exception, match="unknown options"):
        torch.compile(nn.Linear(3, 3), backend="spire", options={"devise": "vulkan:0"})(torch.randn(2, 3))


def test_ddp_optimizer_pieces_train_like_one_process(device, tmp_path):
    # DistributedDataParallel under torch.compile: Dynamo's DDPOptimizer cuts the graph at bucket boundaries and each
    # piece reaches the backend; 2 gloo processes give the losses of one process on the whole batch.
    from test_ddp import BATCH, STEPS, single_process_losses
    here = os.path.dirname(__file__)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]),
               OMP_NUM_THREADS="1")
    init, out = tmp_path / "rendezvous", tmp_path / "losses.txt"
    procs = [subprocess.Popen([sys.executable, os.path.join(here, "ddp_worker.py"), str(rank), "2", str(init), str(out),
                               device, str(STEPS), str(BATCH), "dynamo"], env=env)
             for rank in range(2)]
    for p in procs:
        assert p.wait(timeout=300) == 0
    distributed = [float(v) for v in out.read_text().split()]
    assert int((tmp_path / "losses.txt.pieces").read_text()) >= 2
    single = single_process_losses(device)
    assert len(distributed) == STEPS
    for step, (a, b) in enumerate(zip(distributed, single)):
        assert abs(a - b) <= 1e-5 * abs(b), (step, a, b)
