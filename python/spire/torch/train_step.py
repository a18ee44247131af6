"""spire.torch.compile_step: forward, loss, backward and the optimizer's update in one spire graph, so a training step
moves only the batch in and the loss out, with parameters and optimizer state resident on the device.

The model must convert entirely (no eager segment: the update needs every gradient on the device). Losses:
nn.CrossEntropyLoss / F.cross_entropy and nn.MSELoss / F.mse_loss, mean reduction. Optimizers: torch.optim.SGD
(momentum, weight decay; no dampening, no nesterov) and torch.optim.Adam (no amsgrad), one parameter group, with
torch.optim's update rules (autograd/optimizers.h). The torch module's parameters are brought up to date by sync()
or state_dict(); a parameter changed on the torch side (its _version moved) is uploaded again before the next step."""
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

import spire
from spire.torch.custom_ops import symbolic_trace
from spire.torch.frontend.convert import convert_segment
from spire.torch.frontend.dispatch import describe, fetch_attr
from spire.torch.frontend.probe import probe
from spire.torch.frontend.segments import split_segments
from spire.torch.in_flight import STEPS_IN_FLIGHT, InFlightPlan, current_stream
from spire.torch.tensors import from_numpy, to_numpy, upload_constants


def _loss_kind(loss_fn):
    if loss_fn in (F.cross_entropy,) or isinstance(loss_fn, nn.CrossEntropyLoss):
        if isinstance(loss_fn, nn.CrossEntropyLoss) and (loss_fn.reduction != "mean" or loss_fn.weight is not None or
                                                         loss_fn.label_smoothing != 0):
            raise ValueError("compile_step takes CrossEntropyLoss with mean reduction, no weight, no label smoothing")
        return "cross_entropy"
    if loss_fn in (F.mse_loss,) or isinstance(loss_fn, nn.MSELoss):
        if isinstance(loss_fn, nn.MSELoss) and loss_fn.reduction != "mean":
            raise ValueError("compile_step takes MSELoss with mean reduction")
        return "mse"
    raise ValueError(f"compile_step has no spire form of the loss {loss_fn!r}: use nn.CrossEntropyLoss or nn.MSELoss "
                     "(or spire.torch.compile with a plain training loop, which takes any loss)")


def _optimizer_options(opt):
    if len(opt.param_groups) != 1:
        raise ValueError("compile_step takes an optimizer with one parameter group")
    g = opt.param_groups[0]
    if isinstance(opt, torch.optim.SGD):
        if g.get("dampening", 0) != 0 or g.get("nesterov", False) or g.get("maximize", False):
            raise ValueError("compile_step takes SGD without dampening, nesterov or maximize")
        return ("sgd", float(g["lr"]), float(g.get("momentum", 0)), float(g.get("weight_decay", 0)))
    if isinstance(opt, torch.optim.Adam):
        if g.get("amsgrad", False) or g.get("maximize", False):
            raise ValueError("compile_step takes Adam without amsgrad or maximize")
        b1, b2 = g["betas"]
        return ("adam", float(g["lr"]), float(b1), float(b2), float(g["eps"]), float(g.get("weight_decay", 0)))
    raise ValueError(f"compile_step has no spire form of {type(opt).__name__}: use torch.optim.SGD or Adam")


class _StepPlan(InFlightPlan):
    """device_io: compiled for torch CUDA tensors on the GPU spire's device reads in place, whose batch, target and loss
    are exchanged device to device (steps in flight; on cuda:N with no host wait); else they stream through the host."""

    def __init__(self, conv, exe, param_names, device_io):
        super().__init__(exe)
        self.conv, self.param_names, self.device_io = conv, param_names, device_io  # param_names: spire name -> path


class CompiledStep:
    def __init__(self, model, loss_fn, optimizer, device=None, dump=None, precision="fp32"):
        self.model, self.loss_fn, self.optimizer, self.dump = model, loss_fn, optimizer, dump
        self.loss_kind = _loss_kind(loss_fn)
        _optimizer_options(optimizer)
        self.spire_device = spire.device(device)
        self.precision = spire.precision(precision)
        try:
            self.gm = symbolic_trace(model)
        except Exception as e:
            raise ValueError(f"compile_step needs a model torch.fx.symbolic_trace can follow: {e}") from e
        owned = {id(p) for p in model.parameters()}
        if any(id(p) not in owned for p in optimizer.param_groups[0]["params"]):
            raise ValueError("the optimizer updates tensors that are not the model's parameters")
        self.compilations = 0
        self._plans = {}
        self._active = None
        self._versions = {}  # path -> the _version of the torch tensor the device copy was made from or written to
        # torch's device whose CUDA tensors spire's device exchanges in place: spire's cuda:N itself (the same primary
        # context), or the GPU of a vulkan:N whose driver shares memory with CUDA's (runtime/vulkan/vulkan_cuda_bridge.h).
        peer = self.spire_device.cuda_peer if torch.cuda.is_available() else None
        self._cuda = torch.device("cuda", peer) if peer is not None else None

    # ---- building
    def _build(self, inputs, target):
        results, support = probe(self.gm, inputs)
        items, reasons = split_segments(self.gm, support, results)
        segments = [x for kind, x in items if kind == "segment"]
        eager = [x for kind, x in items if kind == "node" and x.op not in ("placeholder", "output", "get_attr")]
        if eager or len(segments) != 1:
            why = "; ".join(f"{describe(n, self.gm)}: {reasons.get(n, '')}" for n in eager)
            raise ValueError(f"compile_step needs the whole model on spire, but {why or 'it splits into segments'} "
                             "(spire.torch.compile with a plain training loop runs such models)")
        seg = segments[0]
        out_node = next(n for n in self.gm.graph.nodes if n.op == "output").args[0]
        if not isinstance(out_node, torch.fx.Node) or seg.outputs != [out_node]:
            raise ValueError("compile_step takes a model returning one tensor")
        conv = convert_segment(seg, self.gm, inputs)
        b, g = conv.builder, conv.graph
        logits = conv.output_values["out0"]
        tname = "target"
        t = b.input(tname, {torch.int64: "i64", torch.int32: "i32"}.get(target.dtype, "f32"), list(target.shape), False)
        if self.loss_kind == "cross_entropy":
            if target.dtype not in (torch.int64, torch.int32):
                raise ValueError("cross_entropy's target must hold class indices (int64 or int32)")
            loss = b.op("cross_entropy", [logits, t], rows="mixes")
        else:
            if target.dtype != torch.float32 or tuple(target.shape) != tuple(logits.shape):
                raise ValueError(f"mse target must be float32 of the output's shape {list(logits.shape)}")
            d = b.op("sub", [logits, t], rows="pointwise")
            loss = b.reduce("mean", b.op("mul", [d, d], rows="pointwise"), None, False)
        g.output("loss", loss.id)
        trained = {id(p) for p in self.optimizer.param_groups[0]["params"] if p.requires_grad}
        names = [n for n, path in conv.params.items() if id(fetch_attr(self.gm, path)) in trained]
        params = [g.find(n) for n in names]
        grads = g.grad(loss.id, params)
        opt = _optimizer_options(self.optimizer)
        if opt[0] == "sgd":
            g.sgd_step(params, grads, lr=opt[1], momentum=opt[2], weight_decay=opt[3])
        else:
            g.adam_step(params, grads, lr=opt[1], beta1=opt[2], beta2=opt[3], eps=opt[4], weight_decay=opt[5])
        # Streamed: the batch, the target and the loss go through host copies inside the step, so a step costs one
        # submit and one wait (each set() and get() of an unstreamed value would be a round trip of its own). CUDA
        # tensors on spire's own cuda:N instead go in and out device to device.
        device_io = self._cuda is not None and all(t.device == self._cuda for t in list(inputs) + [target])
        exe = spire.compile(g, self.spire_device, stream=not device_io,
                            steps_in_flight=STEPS_IN_FLIGHT if device_io else 1, precision=self.precision)
        if exe.precision_note and self.compilations == 0:
            import warnings
            warnings.warn(f"spire: {exe.precision_note}", stacklevel=3)
        self.compilations += 1
        if self.dump:
            import os
            os.makedirs(self.dump, exist_ok=True)
            with open(os.path.join(self.dump, f"step.{self.compilations}.graph"), "w") as f:
                f.write(g.text())
            with open(os.path.join(self.dump, f"step.{self.compilations}.plan.txt"), "w") as f:
                f.write(exe.plan_text())
        upload_constants(exe, conv)
        return _StepPlan(conv, exe, dict(conv.params), device_io)

    def _key(self, inputs, target):
        def sig(t):
            return (t.dtype, tuple(t.shape))
        return (tuple(sig(t) for t in inputs), sig(target), _optimizer_options(self.optimizer))

    # ---- device state
    def _upload_all(self, plan):
        for name, path in plan.param_names.items():
            t = fetch_attr(self.gm, path)
            plan.exe.set(name, to_numpy(t))
            self._versions[path] = t._version
        self._upload_optimizer_state(plan)

    def _upload_optimizer_state(self, plan):
        states = set(plan.conv.graph.states())
        for name, path in plan.param_names.items():
            st = self.optimizer.state.get(fetch_attr(self.gm, path), {})
            for key, sname in (("momentum_buffer", f"momentum.{name}"), ("exp_avg", f"adam.exp_avg.{name}"),
                               ("exp_avg_sq", f"adam.exp_avg_sq.{name}")):
                if sname in states and isinstance(st.get(key), torch.Tensor):
                    plan.exe.set(sname, to_numpy(st[key]))
            if "adam.step" in states and "step" in st:
                plan.exe.set("adam.step", to_numpy(torch.as_tensor(float(st["step"]), dtype=torch.float64)
                                                   .reshape(plan.conv.graph.type(plan.conv.graph.find("adam.step"))[1])
                                                   .to(_torch_dtype(plan, "adam.step"))))

    def _transfer(self, src, dst):
        """Parameters and optimizer state from one plan's device copies into another's (a new batch size)."""
        src.settle()
        dst.settle()
        for name in list(src.param_names) + src.conv.graph.states():
            if dst.conv.graph.find(name) is not None:
                dst.exe.set(name, src.exe.get(name))

    def sync(self):
        """Writes the device's parameters (and SGD momentum / Adam moments) back into the torch module and
        optimizer."""
        plan = self._active
        if plan is None:
            return
        plan.settle()
        states = set(plan.conv.graph.states())
        with torch.no_grad():
            for name, path in plan.param_names.items():
                t = fetch_attr(self.gm, path)
                t.copy_(from_numpy(plan.exe.get(name), plan.conv.graph.type(plan.conv.graph.find(name))[0]))
                self._versions[path] = t._version
                if id(t) not in {id(p) for p in self.optimizer.param_groups[0]["params"]}:
                    continue
                st = self.optimizer.state[t]
                for key, sname in (("momentum_buffer", f"momentum.{name}"), ("exp_avg", f"adam.exp_avg.{name}"),
                                   ("exp_avg_sq", f"adam.exp_avg_sq.{name}")):
                    if sname in states:
                        st[key] = from_numpy(plan.exe.get(sname), plan.conv.graph.type(plan.conv.graph.find(sname))[0])
                if "adam.step" in states:
                    st["step"] = torch.tensor(float(plan.exe.get("adam.step").reshape(-1)[0]))

    def state_dict(self):
        self.sync()
        return self.model.state_dict()

    # ---- a step
    def __call__(self, *args):
        """step(*inputs, target) -> the loss (a float32 scalar tensor) of this batch, before the update."""
        *inputs, target = args
        key = self._key(inputs, target)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._build(inputs, target)
            self._plans[key] = plan
            if self._active is None:
                self._upload_all(plan)
            else:
                warnings.warn(f"spire: compile_step compiled again for inputs {[list(t.shape) for t in inputs]}",
                              stacklevel=2)
        if self._active is not None and plan is not self._active:
            self._transfer(self._active, plan)
        self._active = plan
        for name, path in plan.param_names.items():  # changed on the torch side since: torch's value wins
            t = fetch_attr(self.gm, path)
            if self._versions.get(path) != t._version:
                plan.settle()
                plan.exe.set(name, to_numpy(t))
                self._versions[path] = t._version
        if plan.device_io:
            return self._step_on_device(plan, inputs, target)
        for name, t in zip(list(plan.conv.inputs) + ["target"], list(inputs) + [target]):
            t = t.detach()
            if t.dtype == torch.float32 and t.device.type == "cpu" and t.is_contiguous():
                plan.exe.set_from(name, t.data_ptr(), t.numel() * 4)  # one memcpy into the streamed copy
            else:
                plan.exe.set(name, to_numpy(t))
        plan.exe.step()
        return torch.from_numpy(plan.exe.get("loss")).reshape(())

    def _step_on_device(self, plan, inputs, target):
        """The step with CUDA tensors: in and out device to device, ordered against torch's current stream on the
        device; the loss is a CUDA tensor that torch's stream reads after the step (no host wait here)."""
        kept = []
        for name, t in zip(list(plan.conv.inputs) + ["target"], list(inputs) + [target]):
            t = t.detach()
            if t.dtype == torch.int64:
                t = t.to(torch.int32)  # spire's device type for int64 values (class indices)
            elif t.dtype not in (torch.float32, torch.int32):
                raise ValueError(f"compile_step on {self._cuda}: a {t.dtype} input; it exchanges float32, int32 and "
                                 "int64 CUDA tensors")
            kept.append((name, t.contiguous()))
        stream = current_stream(self._cuda)
        plan.exe.wait_for_stream(stream)  # after the conversions above and the batch's producers
        for name, t in kept:
            plan.exe.set_device(name, t.data_ptr(), t.numel() * 4)
        plan.submit()
        loss = torch.empty((), dtype=torch.float32, device=self._cuda)
        plan.exe.get_device("loss", loss.data_ptr(), 4)
        plan.exe.signal_stream(stream)
        return loss


def _torch_dtype(plan, name):
    from spire.torch.frontend.builder import SPIRE_TO_TORCH
    return SPIRE_TO_TORCH[plan.conv.graph.type(plan.conv.graph.find(name))[0]]
