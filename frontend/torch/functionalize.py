"""In-place writes into tensors the graph made itself, rewritten as new values, so that spire can take them.

spire computes every value anew (aliasing.py), so an in-place write that something else observes (through a view of
the changed tensor, or by reading the tensor again afterwards) would run in PyTorch and cut the graph there. Where the
changed tensor is one the graph made (not an input or weight, whose change the caller sees), the write means a new
value, and the graph is rewritten to compute it, as PyTorch's own functionalization does:

    bias = w.clone(); bias[n:2 * n].zero_(); F.linear(x, w2, bias)              (Swin v2's attention)
    ->  bias2 = torch.slice_scatter(bias, torch.zeros_like(bias[n:2 * n]), 0, n, 2 * n, 1); F.linear(x, w2, bias2)

The view written through must be a chain of slices and selections (getitem of ints, slices and ..., aten.slice,
select, narrow, detach, a part of split's, chunk's or unbind's tuple) and reshaping views (view): each step is
undone by slice_scatter / select_scatter / reshape, from the written view up to the tensor. The write is zero_,
fill_ (a number), copy_, setitem, an augmented assignment or any in-place tensor method with a functional twin (add_
-> add), at the torch or the ATen level. Every later reader of the tensor reads the new value. The rewritten graph
still runs in PyTorch (the probe records it), so its meaning is checked there too.

Left as they were (aliasing.py keeps them in PyTorch): writes into the caller's tensors (x.float() may be x), views
of other kinds (transpose, expand, a tensor index), a view of the same tensor made before the write and read after
it, a view written (or a write's result through a view) that is used afterwards where something changes the tensor
or its views in place later (PyTorch would show those changes in it), random fills, in-place modules, and
input-free writes, which constant_regions.py folds."""
import copy
import operator

import torch

from .aliasing import is_view, mutated
from .constant_regions import RANDOM_NAMES, input_free

# Augmented assignments (what symbolic_trace records for `x += y`) and their plain operators.
AUGMENTED = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
             operator.itruediv: operator.truediv}
# Identity views: a write through one is a write of the whole tensor.
IDENTITY_VIEWS = frozenset({"detach", "aten.detach.default", "aten.alias.default"})


def _aten_name(node):
    t = node.target
    return str(t) if node.op == "call_function" and isinstance(t, torch._ops.OpOverload) else None


def _full_slice(item):
    return isinstance(item, slice) and item.start is None and item.stop is None and item.step is None


class _Rewriter:
    def __init__(self, graph, results):
        self.g, self.results = graph, results
        self.made = {}  # node this rewrite added -> its shape (None for a dimension it does not know)

    def shape_of(self, n):
        """A tensor's shape (its rank where the rewrite made it), None for anything else."""
        return self.made[n] if n in self.made else getattr(self.results.get(n), "shape", None)

    def is_tensor(self, n):
        return self.shape_of(n) is not None

    def node(self, op, target, *args, like=None, kwargs=None):
        """A new node whose result has the shape of node `like` (a tensor)."""
        n = self.g.create_node(op, target, args, kwargs or {})
        self.made[n] = self.shape_of(like)
        return n

    # ---- the view chain
    def step(self, view):
        """How a view was made from its parent: (parent, scatter) where scatter(parent, src) adds the nodes giving the
        parent with the view's elements replaced by src; None for a view of another kind."""
        args, name = view.args, _aten_name(view)
        parent = args[0] if args else None
        if not isinstance(parent, torch.fx.Node):
            return None
        if view.op == "call_function" and view.target is operator.getitem and not self.is_tensor(parent):
            return self.chunk_step(parent, args[1])  # one part of split's, chunk's or unbind's tuple
        if not self.is_tensor(parent):
            return None
        if view.op == "call_function" and view.target is operator.getitem:
            items = self.index_items(parent, args[1])
            return None if items is None else (parent, lambda p, src: self.scatter_items(p, src, items, 0))
        if name == "aten.slice.Tensor" or (view.op == "call_method" and view.target == "narrow"):
            dim, start, end, step = (list(args[1:]) + [0, None, None, 1][len(args) - 1:])[:4]
            if view.op == "call_method":  # narrow(dim, start, length)
                if not all(isinstance(a, int) for a in args[1:4]):
                    return None
                dim, start, end, step = args[1], args[2], args[2] + args[3], 1
            return parent, lambda p, src: self.node("call_function", torch.slice_scatter, p, src, dim, start, end,
                                                    step, like=p)
        if name == "aten.select.int" or (view.op in ("call_method", "call_function") and
                                         (view.target == "select" or view.target is torch.select)):
            if len(args) != 3 or view.kwargs:
                return None
            return parent, lambda p, src: self.node("call_function", torch.select_scatter, p, src, args[1], args[2],
                                                    like=p)
        if name in IDENTITY_VIEWS or (view.op == "call_method" and view.target in IDENTITY_VIEWS):
            return parent, lambda p, src: src
        if name in ("aten.view.default", "aten._unsafe_view.default") or (
                view.op == "call_method" and view.target == "view" and not view.kwargs and
                not any(isinstance(a, torch.dtype) for a in args[1:])):  # view(dtype) reinterprets the bytes
            # The same elements in another shape (view keeps their row-major order): the view's new value reshaped
            # back is the parent's (make_fx's instance norm: batch norm of a reshaped view, viewed back, then relu_).
            shape = tuple(self.shape_of(parent))
            return parent, lambda p, src: self.node("call_function", torch.reshape, src, shape, like=p)
        return None

    def chunk_step(self, parts, i):
        """(tensor, scatter) for part i of a tuple that split, chunk or unbind made of a tensor (at the torch or the
        ATen level): its offset along the dimension from the parts' recorded sizes; None for any other tuple."""
        name = _aten_name(parts) or (parts.target if parts.op == "call_method" else
                                     getattr(parts.target, "__name__", ""))
        kind = {"split": "split", "chunk": "split", "unbind": "unbind", "aten.split.Tensor": "split",
                "aten.split_with_sizes.default": "split", "aten.unbind.int": "unbind"}.get(name)
        tensor, sizes = (parts.args[0] if parts.args else None), self.results.get(parts)
        if kind is None or not isinstance(i, int) or not isinstance(tensor, torch.fx.Node) or \
                not self.is_tensor(tensor) or not isinstance(sizes, (tuple, list)) or not 0 <= i < len(sizes):
            return None
        at = 1 if kind == "unbind" else 2  # the dimension's place: unbind(x, dim), split / chunk(x, sizes, dim)
        dim = parts.args[at] if len(parts.args) > at else parts.kwargs.get("dim", 0)
        if not isinstance(dim, int):
            return None
        dim %= len(self.shape_of(tensor))
        if kind == "unbind":
            return tensor, lambda p, src: self.node("call_function", torch.select_scatter, p, src, dim, i, like=p)
        offsets = [0]
        for part in sizes:
            offsets.append(offsets[-1] + part.shape[dim])
        start, end = offsets[i], offsets[i + 1]
        return tensor, lambda p, src: self.node("call_function", torch.slice_scatter, p, src, dim, start, end, 1,
                                                like=p)

    def index_items(self, parent, key):
        """x[key]'s items, one per dimension indexed (ints and slices, ... expanded), or None for any other index."""
        items = list(key) if isinstance(key, tuple) else [key]
        for item in items:
            if isinstance(item, torch.fx.Node):
                if self.is_tensor(item):
                    return None  # a tensor index: advanced indexing, a copy
            elif isinstance(item, bool) or not (isinstance(item, (int, slice)) or item is Ellipsis):
                return None  # None (a new axis) and the rest
        if items.count(Ellipsis) > 1:
            return None
        if Ellipsis in items:
            at = items.index(Ellipsis)
            items[at:at + 1] = [slice(None)] * (len(self.shape_of(parent)) - (len(items) - 1))
        return items

    def scatter_items(self, p, src, items, dim):
        """p with p[(:,) * dim + items] replaced by src."""
        if not items:
            return src
        item, rest = items[0], items[1:]
        if _full_slice(item):
            return self.scatter_items(p, src, rest, dim + 1)
        part = self.part(p, (slice(None),) * dim + (item,))
        if isinstance(item, slice):
            inner = self.scatter_items(part, src, rest, dim + 1)
            step = 1 if item.step is None else item.step
            return self.node("call_function", torch.slice_scatter, p, inner, dim, item.start, item.stop, step, like=p)
        inner = self.scatter_items(part, src, rest, dim)  # an int drops its dimension: the rest index from dim on
        return self.node("call_function", torch.select_scatter, p, inner, dim, item, like=p)

    def part(self, p, key):
        """p[key] (ints and slices, no ...) as a new node; its rank is what the rest of the rewrite needs of its
        shape."""
        n = self.g.create_node("call_function", operator.getitem, (p, key))
        items = key if isinstance(key, tuple) else (key,)
        self.made[n] = (None,) * (len(self.shape_of(p)) - sum(1 for i in items if not isinstance(i, slice)))
        return n

    def chain(self, target):
        """[(tensor, None), (view, scatter), ...] from the tensor the graph made down to target, or None."""
        links = []
        node = target
        while is_view(node, self.is_tensor):
            found = self.step(node)
            if found is None:
                return None
            links.append((node, found[1]))
            node = found[0]
        if mutated(node) or node.op in ("placeholder", "get_attr"):
            return None  # the result of an in-place op that was left (it aliases its argument), or the caller's
        return [(node, None)] + links[::-1]

    # ---- the write as a new value of what it writes
    def new_value(self, write, target):
        """A node giving the written view's content after the write, or None where the write has no such form."""
        op, args, kwargs = write.op, write.args, write.kwargs
        name = _aten_name(write) or (write.target if op == "call_method" else getattr(write.target, "__name__", ""))
        if not isinstance(name, str) or any(r in name for r in RANDOM_NAMES) or op == "call_module":
            return None
        rest = args[1:]
        if name in ("zero_", "aten.zero_.default"):
            return self.node("call_function", torch.zeros_like, target, like=target)
        if name in ("fill_", "aten.fill_.Scalar", "aten.fill_.Tensor"):
            if len(rest) != 1 or kwargs:
                return None
            if isinstance(rest[0], (int, float, bool)):
                return self.node("call_function", torch.full_like, target, rest[0], like=target)
            name = "copy_"  # a 0-d tensor's value everywhere (make_fx's record of y[i] = 5.0): a broadcast copy
        if name in ("copy_", "aten.copy_.default"):
            return self.broadcast(rest[0] if rest else None, target)
        if op == "call_function" and write.target in AUGMENTED:
            return self.functional(write, AUGMENTED[write.target], target)
        if _aten_name(write):
            packet, _, overload = name.rpartition(".")
            functional = getattr(getattr(torch.ops.aten, packet[len("aten."):-1], None), overload, None)
            return self.functional(write, functional, target) if packet.endswith("_") else None
        if op == "call_method" and name.endswith("_") and hasattr(torch.Tensor, name[:-1]):
            return self.functional(write, name[:-1], target)
        if op == "call_function" and kwargs.get("inplace") is True:
            return self.functional(write, write.target, target, {**kwargs, "inplace": False})
        if op == "call_function" and name.endswith("_"):
            module = getattr(write.target, "__module__", None) or "torch"
            owner = {"torch._C._nn": torch._C._nn, "torch.nn.functional": torch.nn.functional}.get(module, torch)
            if getattr(owner, name, None) is write.target:
                return self.functional(write, getattr(owner, name[:-1], None), target)
        return None

    def broadcast(self, value, like):
        """Tensor `value` in the dtype and shape of `like` (what copying it into `like` writes), or None."""
        if not isinstance(value, torch.fx.Node) or not self.is_tensor(value):
            return None
        cast = self.node("call_method", "type_as", value, like, like=value)
        # clone: type_as and expand_as may return their argument itself, which a later write would change too.
        return self.fresh(self.node("call_method", "expand_as", cast, like, like=like))

    def fresh(self, value):
        """value copied (a no-op on spire), so that nothing written later aliases what it was made from."""
        return self.node("call_method", "clone", value, like=value)

    def functional(self, write, target_fn, written, kwargs=None):
        """The write's functional twin on the same arguments, in the written tensor's dtype (an in-place op keeps it,
        where the functional one may promote with a tensor operand)."""
        if target_fn is None:
            return None
        value = self.node(write.op, target_fn, *write.args, like=written,
                          kwargs=write.kwargs if kwargs is None else kwargs)
        if any(isinstance(a, torch.fx.Node) and self.is_tensor(a) for a in write.args[1:]):
            return self.fresh(self.node("call_method", "type_as", value, written, like=written))
        return value

    def write_target(self, write):
        """(the tensor or view written, the index items of a setitem or None)."""
        if write.op == "call_function" and write.target is operator.setitem:
            return write.args[0], write.args[1]
        targets = mutated(write)
        return (targets[0], None) if len(targets) == 1 else (None, None)

    def changed_later(self, nodes, after, order):
        """Whether an op after position `after` changes in place any of `nodes` or what aliases them (their views and
        in-place results, through each other)."""
        closure, todo = set(nodes), list(nodes)
        while todo:
            member = todo.pop()
            for user in member.users:
                if order.get(user, -1) > after and member in mutated(user):
                    return True
                if user not in closure and (member in mutated(user) or (
                        is_view(user, self.is_tensor) and user.args and user.args[0] is member)):
                    closure.add(user)
                    todo.append(user)
        return False

    # ---- one write
    def rewrite(self, write, order):
        target, key = self.write_target(write)
        if target is None or not self.is_tensor(target):
            return False
        links = self.chain(target)
        if links is None:
            return False
        base = links[0][0]
        # A view of the tensor made before the write and read after it would see the change in PyTorch.
        # The tensor's aliases: its views, and the results of in-place ops on them (x.add_(1) returns x), through
        # each other.
        members, family, todo = {n for n, _ in links}, {base}, [base]
        while todo:
            member = todo.pop()
            for user in member.users:
                if user not in family and user is not write and (member in mutated(user) or (
                        is_view(user, self.is_tensor) and user.args and user.args[0] in family)):
                    family.add(user)
                    todo.append(user)
        for view in family - members:
            if order.get(view, -1) < order[write] and any(order.get(u, -1) > order[write] for u in view.users):
                return False
        # A view in the chain (or the write's result, a view too where the write went through one) used afterwards
        # still aliases the tensor in PyTorch: a later change to the tensor (through another view) or to the view
        # would show in it, where its new value here would not. Such writes are left as they are, unless nothing
        # changes any of them in place afterwards (make_fx's instance norm: a view of batch norm's result, relu_ on
        # it, its result read on): then each reads its new value.
        aliases = [n for n, _ in links[1:]] + ([write] if key is None and target is not base else [])
        if any(order.get(u, -1) > order[write] for a in aliases for u in a.users) and \
                self.changed_later(family | set(aliases) | {write}, order[write], order):
            return False
        with self.g.inserting_before(write):
            if key is not None:
                items = self.index_items(target, key)
                value = write.args[2]
                if items is None:
                    return False
                written = self.part(target, key)
                if isinstance(value, (int, float, bool)):
                    content = self.node("call_function", torch.full_like, written, value, like=written)
                else:
                    content = self.broadcast(value, written)
                if content is None:
                    self.g.erase_node(written)
                    return False
                new_target = self.scatter_items(target, content, items, 0)
            else:
                new_target = self.new_value(write, target)
                if new_target is None:
                    return False
            new = {target: new_target}
            for (parent, _), (view, scatter) in zip(links[::-1][1:], links[::-1][:-1]):
                new[parent] = scatter(parent, new[view])
        for old, value in new.items():
            for user in list(old.users):
                if order.get(user, -1) > order[write]:
                    user.replace_input_with(old, value)
        if key is None:
            write.replace_all_uses_with(new_target)
        self.g.erase_node(write)
        return True


def functionalized(gm, record):
    """gm, or a copy of it with the writes of the module comment rewritten when there are any. record(gm): the eager
    run's {node: summary} (probe.record), whose tensors have a .shape."""
    if not any(mutated(n) and n.op != "call_module" for n in gm.graph.nodes):
        return gm  # nothing to rewrite (an in-place module, ReLU(inplace=True), keeps its own rule): no copy, no run
    graph = copy.deepcopy(gm.graph)
    copied = torch.fx.GraphModule(gm, graph)
    rewriter = _Rewriter(graph, record(copied))
    free = input_free(copied, rewriter.is_tensor)
    order = {n: i for i, n in enumerate(graph.nodes)}
    changed = False
    for node in list(graph.nodes):
        if node in free or not mutated(node):
            continue
        changed |= rewriter.rewrite(node, order)
    if not changed:
        return gm
    graph.lint()
    copied.recompile()
    return copied
