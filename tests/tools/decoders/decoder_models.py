"""The decoder LLMs spire's tests and GPU benchmarks run: one definition of each model, of its ONNX export and of
PyTorch's greedy decoding, used by tests/tools/decoders/ (tiny configs, lavapipe) and later by GPU benchmarks (the full
configs). Nothing is downloaded: weights are random, from torch.manual_seed.

Two families, written like Hugging Face's modelling code so that their ONNX files look like the decoders people
export with Hugging Face's tools:
  - GPT-2 (learned positions, LayerNorm, GELU with tanh, causal attention, fused QKV, tied head);
  - Llama (RMSNorm, rotary embeddings, SwiGLU MLP, grouped-query attention).

The export convention (Hugging Face's "decoder with past"):
  inputs   input_ids [B, T] int64, attention_mask [B, past+T] int64, position_ids [B, T] int64,
           past_key_values.{i}.key / .value [B, kv_heads, past, head_dim] float32
  outputs  logits [B, T, vocab], present.{i}.key / .value [B, kv_heads, past+T, head_dim]
The cache grows by Concat along the sequence axis; `past` and `T` (and the batch) are dynamic axes. A key j is
attended by query i (at absolute position past+i) when j <= past+i and attention_mask[b, j] == 1, so masked slots
of the cache take no part: position_ids say where a token sits, not its slot.

Usage (Debian's /usr/bin/python3, torch 1.13):
  decoder_models.py export OUT_DIR [--configs gpt2-tiny,llama-tiny]   the test data (docs/DECODERS.md)
  decoder_models.py onnx CONFIG OUT.onnx                              one model, e.g. gpt2-124m for the GPU
  decoder_models.py greedy CONFIG 1,2,3 N                             PyTorch's N greedy tokens after a prompt
  decoder_models.py bench CONFIG 1,2,3 N [--dtype bf16] [--mode reduce-overhead]   PyTorch's decoding speed (CUDA)
"""
import argparse
import inspect
import math
import os
import sys
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

OPSET = 14


@dataclass(frozen=True)
class DecoderConfig:
    family: str          # "gpt2" or "llama"
    vocab: int
    layers: int
    width: int           # the model (residual) width
    heads: int
    kv_heads: int        # grouped-query attention: heads / kv_heads query heads share one key/value head
    mlp_width: int
    max_positions: int   # GPT-2's learned position table; Llama's rotary has no table, its context is this too
    tied_head: bool      # the head reuses the token embedding
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    seed: int = 0

    @property
    def head_dim(self):
        return self.width // self.heads


CONFIGS = {
    # Tiny ones for lavapipe (milliseconds a step on a CPU), with a context for 64 new tokens after a prompt.
    "gpt2-tiny": DecoderConfig("gpt2", vocab=97, layers=2, width=32, heads=4, kv_heads=4, mlp_width=128,
                               max_positions=128, tied_head=True, seed=1),
    "llama-tiny": DecoderConfig("llama", vocab=101, layers=2, width=32, heads=4, kv_heads=2, mlp_width=64,
                                max_positions=128, tied_head=False, seed=2),
    # GPT-2 small (124M), as OpenAI's.
    "gpt2-124m": DecoderConfig("gpt2", vocab=50257, layers=12, width=768, heads=12, kv_heads=12, mlp_width=3072,
                               max_positions=1024, tied_head=True, seed=3),
    # Llama 3.2 1B's shapes (1.24B parameters): 16 layers, 32 query and 8 key/value heads of 64, tied head.
    "llama-1b": DecoderConfig("llama", vocab=128256, layers=16, width=2048, heads=32, kv_heads=8, mlp_width=8192,
                              max_positions=2048, tied_head=True, rope_theta=500000.0, seed=4),
}


def attention_allowed(attention_mask, past, T):
    """[B, 1, T, past+T] bool: query i (absolute position past+i) may see key j when j <= past+i and the mask
    keeps j."""
    kv = past + T
    q_pos = torch.arange(T, device=attention_mask.device) + past
    k_pos = torch.arange(kv, device=attention_mask.device)
    causal = k_pos[None, :] <= q_pos[:, None]                       # [T, kv]
    return causal[None, None] & attention_mask[:, None, None, :].bool()


def attend(q, k, v, allowed):
    """Softmax attention of q [B, H, T, d] over k, v [B, H, past+T, d]; disallowed keys get the float minimum
    (so a row with no key left is uniform, as in Hugging Face's models, rather than NaN)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    # The minimum on the scores' device: a CPU constant would keep torch.compile from capturing a CUDA graph.
    lowest = torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype, device=scores.device)
    scores = torch.where(allowed, scores, lowest)
    return torch.softmax(scores, dim=-1) @ v


# ---- GPT-2 ----------------------------------------------------------------------------------------------------

class Gpt2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.ln_1, self.ln_2 = nn.LayerNorm(c.width, eps=c.norm_eps), nn.LayerNorm(c.width, eps=c.norm_eps)
        self.c_attn, self.attn_proj = nn.Linear(c.width, 3 * c.width), nn.Linear(c.width, c.width)
        self.c_fc, self.mlp_proj = nn.Linear(c.width, c.mlp_width), nn.Linear(c.mlp_width, c.width)

    def forward(self, x, allowed, past_k, past_v):
        B, T, _ = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(self.c.width, dim=2)
        heads = lambda t: t.view(B, T, self.c.heads, self.c.head_dim).transpose(1, 2)  # noqa: E731
        q, k, v = heads(q), heads(k), heads(v)
        k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
        a = attend(q, k, v, allowed).transpose(1, 2).reshape(B, T, self.c.width)
        x = x + self.attn_proj(a)
        x = x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))
        return x, k, v


class Gpt2(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.wte, self.wpe = nn.Embedding(c.vocab, c.width), nn.Embedding(c.max_positions, c.width)
        self.h = nn.ModuleList(Gpt2Block(c) for _ in range(c.layers))
        self.ln_f = nn.LayerNorm(c.width, eps=c.norm_eps)
        self.head_weight = None  # the head's own copy of the tied table, where it differs (quantized_int8)

    def forward(self, input_ids, attention_mask, position_ids, *past):
        T, past_len = input_ids.shape[1], past[0].shape[2]
        allowed = attention_allowed(attention_mask, past_len, T)
        x = self.wte(input_ids) + self.wpe(position_ids)
        present = []
        for i, block in enumerate(self.h):
            x, k, v = block(x, allowed, past[2 * i], past[2 * i + 1])
            present += [k, v]
        head = self.wte.weight if self.head_weight is None else self.head_weight
        return (self.ln_f(x) @ head.t(), *present)


# ---- Llama ----------------------------------------------------------------------------------------------------

class RmsNorm(nn.Module):
    def __init__(self, width, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(width)), eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        d = c.head_dim
        self.input_layernorm = RmsNorm(c.width, c.norm_eps)
        self.post_attention_layernorm = RmsNorm(c.width, c.norm_eps)
        self.q_proj = nn.Linear(c.width, c.heads * d, bias=False)
        self.k_proj = nn.Linear(c.width, c.kv_heads * d, bias=False)
        self.v_proj = nn.Linear(c.width, c.kv_heads * d, bias=False)
        self.o_proj = nn.Linear(c.heads * d, c.width, bias=False)
        self.gate_proj = nn.Linear(c.width, c.mlp_width, bias=False)
        self.up_proj = nn.Linear(c.width, c.mlp_width, bias=False)
        self.down_proj = nn.Linear(c.mlp_width, c.width, bias=False)

    def forward(self, x, allowed, cos, sin, past_k, past_v):
        B, T, _ = x.shape
        c, d = self.c, self.c.head_dim
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(B, T, c.heads, d).transpose(1, 2)
        k = self.k_proj(h).view(B, T, c.kv_heads, d).transpose(1, 2)
        v = self.v_proj(h).view(B, T, c.kv_heads, d).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
        group = c.heads // c.kv_heads
        # Grouped-query attention: each key/value head serves `group` query heads (Hugging Face's repeat_kv).
        repeat = lambda t: t[:, :, None].expand(B, c.kv_heads, group, t.shape[2], d).reshape(B, c.heads, t.shape[2], d)  # noqa: E731
        a = attend(q, repeat(k), repeat(v), allowed).transpose(1, 2).reshape(B, T, c.heads * d)
        x = x + self.o_proj(a)
        h = self.post_attention_layernorm(x)
        x = x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))
        return x, k, v


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(c.vocab, c.width)
        self.layers = nn.ModuleList(LlamaBlock(c) for _ in range(c.layers))
        self.norm = RmsNorm(c.width, c.norm_eps)
        self.lm_head = None if c.tied_head else nn.Linear(c.width, c.vocab, bias=False)
        inv_freq = 1.0 / (c.rope_theta ** (torch.arange(0, c.head_dim, 2, dtype=torch.float32) / c.head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, input_ids, attention_mask, position_ids, *past):
        T, past_len = input_ids.shape[1], past[0].shape[2]
        allowed = attention_allowed(attention_mask, past_len, T)
        # Rotary angles from the explicit positions: [B, 1, T, head_dim], shared by every layer and head.
        freqs = position_ids[:, :, None].float() * self.inv_freq[None, None, :]
        emb = torch.cat([freqs, freqs], dim=-1)[:, None]
        x = self.embed_tokens(input_ids)
        # In the model's dtype (as Hugging Face's rotary does), so that a bf16 model stays bf16.
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        present = []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, allowed, cos, sin, past[2 * i], past[2 * i + 1])
            present += [k, v]
        x = self.norm(x)
        logits = x @ self.embed_tokens.weight.t() if self.lm_head is None else self.lm_head(x)
        return (logits, *present)


def build(name):
    """The model of config `name` with its random weights (fixed seed), in eval mode."""
    c = CONFIGS[name]
    torch.manual_seed(c.seed)
    model = Gpt2(c) if c.family == "gpt2" else Llama(c)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("bias"):
                p.uniform_(-0.1, 0.1)
            elif p.dim() == 1:  # norm scales: near one, each its own (trained models never hold identical ones)
                p.uniform_(0.8, 1.2)
            elif "proj" in n or "c_attn" in n or "c_fc" in n:
                # Larger than a trained model's, so that attention and MLP, not the embedding alone, decide the
                # next token: the greedy sequences then vary (a model that repeats one token tests little).
                p.normal_(0, 2.3 / math.sqrt(p.shape[1]))
            else:               # the token and position tables and an untied head
                p.normal_(0, 0.3)
    return model.eval()


def int8_per_channel(w):
    """w [N, K] (a Linear's weight, one output channel a row) through spire's int8 quantization
    (passes/int8_weights.h): scale = max |row| / 127 in f32, levels round(w / scale) clamped to [-127, 127], back to
    f32 as levels times scale."""
    scale = w.abs().amax(1, keepdim=True) / 127
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return torch.clamp(torch.round(w / scale), -127, 127) * scale


def quantized_int8(model):
    """A copy of `model` with the weights `spire generate --int8` quantizes quantized as it does: every Linear's
    weight and GPT-2's head (the export's transposed copy of the token table; the table itself, gathered, stays)."""
    q = type(model)(model.c)
    q.load_state_dict(model.state_dict())
    with torch.no_grad():
        for mod in q.modules():
            if isinstance(mod, nn.Linear):
                mod.weight.copy_(int8_per_channel(mod.weight))
        if isinstance(q, Gpt2):
            q.head_weight = int8_per_channel(q.wte.weight.detach().clone())
    return q.eval()


# ---- the ONNX convention --------------------------------------------------------------------------------------

def input_names(c):
    names = ["input_ids", "attention_mask", "position_ids"]
    for i in range(c.layers):
        names += [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
    return names


def output_names(c):
    names = ["logits"]
    for i in range(c.layers):
        names += [f"present.{i}.key", f"present.{i}.value"]
    return names


def empty_past(c, batch=1):
    return [torch.zeros(batch, c.kv_heads, 0, c.head_dim) for _ in range(2 * c.layers)]


def export_onnx(model, path):
    """Writes `model` as ONNX with Hugging Face's names and dynamic axes (batch, sequence, past_sequence)."""
    c = model.c
    # Traced with a past of 2 and 3 new tokens so that no size is 0 or 1 (either would be specialised).
    B, past, T = 2, 2, 3
    ids = torch.randint(0, c.vocab, (B, T))
    mask = torch.ones(B, past + T, dtype=torch.int64)
    pos = torch.arange(past, past + T)[None].expand(B, T).contiguous()
    past_kv = [torch.randn(B, c.kv_heads, past, c.head_dim) for _ in range(2 * c.layers)]
    dyn = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "past_sequence + sequence"},
           "position_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}}
    for i in range(c.layers):
        for kv in ("key", "value"):
            dyn[f"past_key_values.{i}.{kv}"] = {0: "batch", 2: "past_sequence"}
            dyn[f"present.{i}.{kv}"] = {0: "batch", 2: "past_sequence + sequence"}
    # The TorchScript exporter, as Debian's torch 1.13 has it (torch >= 2.9 defaults to the dynamo exporter).
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, (ids, mask, pos, *past_kv), path, opset_version=OPSET, input_names=input_names(c),
                      output_names=output_names(c), dynamic_axes=dyn, do_constant_folding=True, **legacy)


class WithoutCache(nn.Module):
    """A decoder exported without its cache: input_ids, attention_mask, position_ids -> logits, the whole sequence each
    call (an empty past inside). `spire generate` runs such a model as a plain one."""

    def __init__(self, model):
        super().__init__()
        self.model, self.c = model, model.c

    def forward(self, input_ids, attention_mask, position_ids):
        c = self.c
        past = [torch.zeros(input_ids.shape[0], c.kv_heads, 0, c.head_dim) for _ in range(2 * c.layers)]
        return self.model(input_ids, attention_mask, position_ids, *past)[0]


def export_without_cache(model, path):
    """`model` as WithoutCache, batch and sequence dynamic."""
    c = model.c
    B, T = 2, 3
    ids = torch.randint(0, c.vocab, (B, T))
    mask = torch.ones(B, T, dtype=torch.int64)
    pos = torch.arange(T)[None].expand(B, T).contiguous()
    names = ["input_ids", "attention_mask", "position_ids"]
    dyn = {n: {0: "batch", 1: "sequence"} for n in names + ["logits"]}
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(WithoutCache(model), (ids, mask, pos), path, opset_version=OPSET, input_names=names,
                      output_names=["logits"], dynamic_axes=dyn, do_constant_folding=True, **legacy)


def run(model, ids, mask, pos, past):
    with torch.no_grad():
        out = model(ids, mask, pos, *past)
    return out[0], list(out[1:])


def greedy(model, prompt, new_tokens, follow=None):
    """PyTorch's greedy continuation of `prompt` (a list of ids), batch 1: a prefill, then one decode step per
    token through the growing cache, as the exported model runs. With `follow` (teacher forcing, as `spire generate
    --follow-tokens`), decode step i feeds follow[i] instead of the token chosen before it; the choices are returned."""
    c = model.c
    ids = torch.tensor([prompt])
    logits, past = run(model, ids, torch.ones_like(ids), torch.arange(len(prompt))[None], empty_past(c))
    tokens = []
    for _ in range(new_tokens):
        tokens.append(int(logits[0, -1].argmax()))
        n = len(prompt) + len(tokens)
        if len(tokens) == new_tokens:
            break
        fed = tokens[-1] if follow is None else follow[len(tokens) - 1]
        logits, past = run(model, torch.tensor([[fed]]), torch.ones(1, n, dtype=torch.int64),
                           torch.tensor([[n - 1]]), past)
    return tokens


# ---- PyTorch's decoding speed, beside `spire generate` (tools/gpu/run-models.sh PARTS=decoders) ----------------

class StaticCacheDecoder(nn.Module):
    """One decode step of `model` against a preallocated cache, as `spire generate` runs it and gpt-fast does: the
    cache [1, kv_heads, C - 1, head_dim] per layer is a buffer the step updates in place (index_copy_ into the
    token's slot), every step has the same shapes (so torch.compile(mode="reduce-overhead") can replay it as a CUDA
    graph), the mask keeps the slots before the token and its own key (the last of the C positions), and the step
    returns the argmax of its logits (the next token, on the device)."""

    def __init__(self, model, context, dtype, device):
        super().__init__()
        c = model.c
        self.model, self.context = model, context
        for i in range(2 * c.layers):
            self.register_buffer(f"cache{i}", torch.zeros(1, c.kv_heads, context - 1, c.head_dim, dtype=dtype, device=device))
        self.register_buffer("slots", torch.arange(context, device=device))

    def caches(self):
        return [getattr(self, f"cache{i}") for i in range(2 * self.model.c.layers)]

    def forward(self, token, pos):
        """token, pos: int64 [1, 1] on the device."""
        mask = ((self.slots < pos[0]) | (self.slots == self.context - 1)).to(torch.int64)[None]
        logits, *present = self.model(token, mask, pos, *self.caches())
        for cache, p in zip(self.caches(), present):
            cache.index_copy_(2, pos[0], p[:, :, -1:])
        return logits[:, -1].argmax(-1, keepdim=True)


def weight_bytes_per_token(model, element_bytes):
    """What spire's report counts (tools/spire/decode_traffic.h): every weight read once, a gathered table (GPT-2's
    wpe; its wte is also the head, read whole) one row."""
    total = 0
    for name, p in model.named_parameters():
        untied_table = name.endswith("embed_tokens.weight") and getattr(model, "lm_head", None) is not None
        gathered_only = name.endswith("wpe.weight") or untied_table
        total += (p.shape[-1] if gathered_only else p.numel()) * element_bytes
    return total


def bench(config, prompt, new_tokens, device, dtype, mode):
    """Greedy decoding of `new_tokens` after `prompt` with a static cache, eager or torch.compile(mode=...): returns
    (tokens, tokens/s of the decode steps after the first, GB/s by spire's count). The run is done twice (the first
    compiles and records CUDA graphs) and the second timed, its decode steps between two synchronizations."""
    model = build(config).to(device=device, dtype=dtype)
    c = model.c
    P, C = len(prompt), len(prompt) + new_tokens
    step = StaticCacheDecoder(model, C, dtype, device)
    run_step = torch.compile(step, mode=mode, fullgraph=True) if mode != "eager" else step
    element = torch.tensor([], dtype=dtype).element_size()
    sync = torch.cuda.synchronize if str(device).startswith("cuda") else (lambda: None)
    row_bytes = 2 * c.layers * c.kv_heads * c.head_dim * element
    for attempt in range(2):
        with torch.no_grad():
            ids = torch.tensor([prompt], device=device)
            logits, present = run(model, ids, torch.ones_like(ids), torch.arange(P, device=device)[None],
                                  [p.to(device=device, dtype=dtype) for p in empty_past(c)])
            for cache, p in zip(step.caches(), present):
                cache.zero_()
                cache[:, :, :P] = p
            tokens = [logits[:, -1].argmax(-1, keepdim=True)]
            for pos in range(P, P + new_tokens - 1):
                if pos == P + 1:
                    sync()
                    t0 = time.perf_counter()
                tokens.append(run_step(tokens[-1], torch.tensor([[pos]], device=device)).clone())
            sync()
            seconds = time.perf_counter() - t0
    steps = new_tokens - 2
    cache_bytes = sum((pos + 1) * row_bytes for pos in range(P + 1, P + new_tokens - 1))
    bytes_per_token = weight_bytes_per_token(model, element) + cache_bytes / steps
    return [int(t) for t in torch.cat(tokens).flatten().tolist()], steps / seconds, bytes_per_token * steps / seconds / 1e9


# ---- the test data --------------------------------------------------------------------------------------------

PROMPT = [3, 14, 15, 92, 65]   # the greedy tests' prompt (every id below both tiny vocabularies)
GREEDY_TOKENS = 64
LONG_TOKENS = 256              # the teacher-forced comparisons' length, where the model's positions allow it


def write_safetensors(path, tensors):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools", "gpu"))
    import safetensors_io
    safetensors_io.write_safetensors(path, tensors)


def prompt_logits(model, prompt):
    """The prefill's logits [1, P, vocab] for `prompt`, in f32 and under torch.autocast's bf16 (CPU; products in
    bf16, softmax and norms in f32, as spire's bf16 policy), both as float32 arrays."""
    c = model.c
    ids = torch.tensor([prompt])
    args = (ids, torch.ones_like(ids), torch.arange(len(prompt))[None], empty_past(c))
    f32, _ = run(model, *args)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bf16, _ = run(model, *args)
    return {"logits": f32.numpy(), "logits_bf16": bf16.float().numpy()}


def write_case(out_dir, name, c, ids, mask, pos, past, logits, present):
    inputs = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "position_ids": pos.numpy()}
    for i in range(c.layers):
        inputs[f"past_key_values.{i}.key"], inputs[f"past_key_values.{i}.value"] = past[2 * i].numpy(), past[2 * i + 1].numpy()
    outputs = {"logits": logits.numpy()}
    for i in range(c.layers):
        outputs[f"present.{i}.key"], outputs[f"present.{i}.value"] = present[2 * i].numpy(), present[2 * i + 1].numpy()
    write_safetensors(os.path.join(out_dir, name + ".in.safetensors"), inputs)
    write_safetensors(os.path.join(out_dir, name + ".torch.safetensors"), outputs)


def export_test_data(out_dir, names):
    """For each config NAME: NAME.onnx; NAME_prefill (past 0, 5 tokens, batch 2) and NAME_decode (past 5 from the
    prefill, 1 token, one past slot masked out) as .in.safetensors / .torch.safetensors (PyTorch's outputs);
    NAME.greedy.txt, PyTorch's greedy tokens for PROMPT; NAME.greedy_long.txt, LONG_TOKENS of them (fewer where a
    learned position table ends first); NAME.int8_follow.txt, PyTorch's choices along those with the weights
    quantized as `spire generate --int8` does (quantized_int8); NAME.follow.txt, a sequence to follow (FOLLOW) and PyTorch's choices along it;
    NAME.prompt.torch.safetensors, the prefill's logits for PROMPT in f32 and
    bf16 (prompt_logits); gpt2-tiny.renamed_positions.onnx and gpt2-tiny.renamed_cache.onnx, off the convention; and
    gpt2-tiny.no_cache.onnx, the same model without its cache (WithoutCache)."""
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        model = build(name)
        c = model.c
        export_onnx(model, os.path.join(out_dir, name + ".onnx"))
        g = torch.Generator().manual_seed(100 + c.seed)
        B, T = 2, 5
        ids = torch.randint(0, c.vocab, (B, T), generator=g)
        mask = torch.ones(B, T, dtype=torch.int64)
        pos = torch.arange(T)[None].expand(B, T).contiguous()
        past = empty_past(c, B)
        logits, present = run(model, ids, mask, pos, past)
        write_case(out_dir, name + "_prefill", c, ids, mask, pos, past, logits, present)
        # One decode step of the first sequence after its prefill, with slot 2 of the cache masked out: the way a
        # preallocated cache hides its unused slots.
        ids1 = torch.randint(0, c.vocab, (1, 1), generator=g)
        mask1 = torch.ones(1, T + 1, dtype=torch.int64)
        mask1[0, 2] = 0
        pos1 = torch.tensor([[T]])
        past1 = [p[:1].contiguous() for p in present]
        logits1, present1 = run(model, ids1, mask1, pos1, past1)
        write_case(out_dir, name + "_decode", c, ids1, mask1, pos1, past1, logits1, present1)
        with open(os.path.join(out_dir, name + ".greedy.txt"), "w") as f:
            f.write(",".join(map(str, greedy(model, PROMPT, GREEDY_TOKENS))) + "\n")
        # GPT-2's last position is max_positions - 1: the prompt's and the new tokens but the last (never fed).
        long_tokens = LONG_TOKENS if c.family != "gpt2" else min(LONG_TOKENS, c.max_positions - len(PROMPT))
        greedy_long = greedy(model, PROMPT, long_tokens)
        with open(os.path.join(out_dir, name + ".greedy_long.txt"), "w") as f:
            f.write(",".join(map(str, greedy_long)) + "\n")
        # PyTorch's choices along those tokens with the weights spire --int8 quantizes quantized as it does.
        with open(os.path.join(out_dir, name + ".int8_follow.txt"), "w") as f:
            f.write(",".join(map(str, greedy(quantized_int8(model), PROMPT, long_tokens, greedy_long))) + "\n")
        write_safetensors(os.path.join(out_dir, name + ".prompt.torch.safetensors"), prompt_logits(model, PROMPT))
        follow = [i * 37 % 89 for i in range(1, GREEDY_TOKENS)]  # ids below both vocabularies, unlike greedy ones
        with open(os.path.join(out_dir, name + ".follow.txt"), "w") as f:
            f.write(",".join(map(str, follow)) + "\n" + ",".join(map(str, greedy(model, PROMPT, GREEDY_TOKENS, follow))) + "\n")
    # Off the convention: gpt2-tiny with its position_ids input renamed (the refusal test of `spire generate`).
    if "gpt2-tiny" in names:
        import onnx
        m = onnx.load(os.path.join(out_dir, "gpt2-tiny.onnx"))
        for v in m.graph.input:
            if v.name == "position_ids":
                v.name = "positions"
        for n in m.graph.node:
            for i, x in enumerate(n.input):
                if x == "position_ids":
                    n.input[i] = "positions"
        onnx.save(m, os.path.join(out_dir, "gpt2-tiny.renamed_positions.onnx"))
        # Off the convention in its cache's names (past_key_values.{i}.key -> past_key_{i}, ...): run as a plain model
        # with an empty cache.
        m = onnx.load(os.path.join(out_dir, "gpt2-tiny.onnx"))
        renamed = {}
        for v in m.graph.input:
            if v.name.startswith("past_key_values."):
                _, layer, kv = v.name.split(".")
                renamed[v.name] = f"past_{kv}_{layer}"
                v.name = renamed[v.name]
        for n in m.graph.node:
            for i, x in enumerate(n.input):
                if x in renamed:
                    n.input[i] = renamed[x]
        onnx.save(m, os.path.join(out_dir, "gpt2-tiny.renamed_cache.onnx"))
        export_without_cache(build("gpt2-tiny"), os.path.join(out_dir, "gpt2-tiny.no_cache.onnx"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export", help="the test data for the given configs into OUT_DIR")
    e.add_argument("out_dir")
    e.add_argument("--configs", default="gpt2-tiny,llama-tiny")
    o = sub.add_parser("onnx", help="one config's model as ONNX")
    o.add_argument("config", choices=sorted(CONFIGS))
    o.add_argument("path")
    g = sub.add_parser("greedy", help="PyTorch's greedy tokens (comma-separated) for a prompt of token ids")
    g.add_argument("config", choices=sorted(CONFIGS))
    g.add_argument("prompt_ids", help="e.g. 1,2,3")
    g.add_argument("new_tokens", type=int)
    b = sub.add_parser("bench", help="PyTorch's greedy decoding speed on CUDA with a static cache (StaticCacheDecoder)")
    b.add_argument("config", choices=sorted(CONFIGS))
    b.add_argument("prompt_ids", help="e.g. 1,2,3")
    b.add_argument("new_tokens", type=int)
    b.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    b.add_argument("--mode", default="eager", help="eager, or a torch.compile mode (reduce-overhead)")
    a = p.parse_args()
    if a.cmd == "bench":
        torch.backends.cuda.matmul.allow_tf32 = False  # strict f32, as spire's f32
        dtype = torch.float32 if a.dtype == "f32" else torch.bfloat16
        tokens, tps, gbs = bench(a.config, [int(t) for t in a.prompt_ids.split(",")], a.new_tokens, "cuda", dtype, a.mode)
        print("tokens: " + ",".join(map(str, tokens)))
        print(f"torch {a.mode} {a.dtype}: {tps:.1f} tokens/s, {gbs:.1f} GB/s")
    elif a.cmd == "export":
        export_test_data(a.out_dir, a.configs.split(","))
    elif a.cmd == "onnx":
        export_onnx(build(a.config), a.path)
    else:
        print(",".join(map(str, greedy(build(a.config), [int(t) for t in a.prompt_ids.split(",")], a.new_tokens))))


if __name__ == "__main__":
    main()
