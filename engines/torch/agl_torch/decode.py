"""A lean forward pass for decoding, over the transformers model's own modules, with a KV cache the engine owns
(after gpt-fast): the projections, norms and MLPs are the model's (so LoRA adapters that peft injected into them
take part), and the rest is a few tensor ops.

- The cache is one static tensor per K and V, [layers, rows, kv heads, slots, head dim], allocated for the longest
  request seen so far and reused, so its addresses stay fixed (what a captured CUDA graph needs).
- Prompts are left-padded to a common end, so every row writes slot s at decoding step s - P: one slot index (a
  device tensor) for the whole batch, and positions per row (a device tensor) for the rotary embeddings.
- Attention reads the filled slots only, rounded up to a length bucket (powers of two from 64), with a mask that
  hides each row's left padding (and what lies outside a sliding window).

Families: GPT-2 (the built-in models) and Llama / Qwen2 / Mistral. Anything else decodes with transformers' own
forward (generate.py's eager path).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F

from .batch import decoder_layers, output_head

if TYPE_CHECKING:
    from transformers import PreTrainedModel

FAMILIES = ('gpt2', 'llama', 'qwen2', 'mistral')


def bucket(n: int, smallest: int = 64) -> int:
    """The power of two at least n (and at least `smallest`)."""
    b = smallest
    while b < n:
        b *= 2
    return b


def supports(model: PreTrainedModel) -> bool:
    cfg: Any = model.config  # a family's config: its fields are the family's
    if cfg.model_type not in FAMILIES:
        return False
    if cfg.model_type == 'gpt2':
        return not cfg.scale_attn_by_inverse_layer_idx and not cfg.reorder_and_upcast_attn and not getattr(cfg, 'add_cross_attention', False)
    rope = getattr(cfg, 'rope_parameters', None) or getattr(cfg, 'rope_scaling', None) or {}
    return bool(rope.get('rope_type', rope.get('type', 'default')) in ('default', 'linear', 'llama3', 'dynamic', 'yarn'))


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class KVCache:
    """K and V for every layer, [layers, rows, kv heads, slots, head dim], at fixed addresses."""

    def __init__(self, layers: int, rows: int, kv_heads: int, slots: int, head_dim: int, dtype: torch.dtype, device: torch.device):
        shape = (layers, rows, kv_heads, slots, head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self.rows, self.slots = rows, slots

    def fits(self, rows: int, slots: int) -> bool:
        return rows <= self.rows and slots <= self.slots

    def keep(self, index: torch.Tensor) -> None:
        """Moves the rows `index` (in order) to the front: compaction after rows finish."""
        n = index.shape[0]
        self.k[:, :n] = self.k.index_select(1, index)
        self.v[:, :n] = self.v.index_select(1, index)


class LeanDecoder:
    """Prefill and one-token steps over an HF causal LM's modules, writing and reading a KVCache."""

    def __init__(self, model: PreTrainedModel):
        self.model = model
        cfg: Any = model.config  # a family's config: its fields are the family's
        self.gpt2: bool = cfg.model_type == 'gpt2'
        # The family's decoder (GPT2Model, LlamaModel...): its modules are named by the family.
        self.dec: Any = model.base_model
        self.layers = decoder_layers(model)  # GPT-2: .h, the Llama family: .layers
        self.heads: int
        self.kv_heads: int
        self.head_dim: int
        if self.gpt2:
            self.heads = self.kv_heads = cfg.n_head
            self.head_dim = cfg.n_embd // cfg.n_head
        else:
            self.heads, self.kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
            self.head_dim = getattr(cfg, 'head_dim', None) or cfg.hidden_size // cfg.num_attention_heads
        self.windows = [self._window(cfg, i) for i in range(len(self.layers))]
        self.head = output_head(model)
        self.cache: KVCache | None = None

    @staticmethod
    def _window(cfg: Any, i: int) -> int | None:
        window: int | None = None
        types = getattr(cfg, 'layer_types', None)
        if cfg.model_type == 'mistral' or (cfg.model_type == 'qwen2' and types and types[i] == 'sliding_attention'):
            window = cfg.sliding_window
        return window

    def ensure_cache(self, rows: int, slots: int) -> KVCache:
        """A cache for `rows` x `slots` (grown when a request needs more; False-y growth clears nothing else)."""
        if self.cache is None or not self.cache.fits(rows, slots):
            old = self.cache
            rows = max(rows, old.rows if old else 0)
            slots = max(slots, old.slots if old else 0)
            self.cache = None
            p = next(self.model.parameters())
            self.cache = KVCache(len(self.layers), rows, self.kv_heads, slots, self.head_dim, p.dtype, p.device)
        return self.cache

    @property
    def kv(self) -> KVCache:
        """The cache, once ensure_cache made it."""
        if self.cache is None:
            raise RuntimeError('the lean decoder has no KV cache yet: ensure_cache first')
        return self.cache

    # -- the mask ------------------------------------------------------------------------------------------
    def mask(self, left: torch.Tensor, q_slots: torch.Tensor, keys: int, window: int | None) -> torch.Tensor:
        """[B, 1, T, keys] True where query slot q may read key slot k: k <= q, k past the row's padding, inside the
        window. A padding slot reads itself (its output is never used, but must stay finite)."""
        k = torch.arange(keys, device=left.device)
        q = q_slots[None, :, None]
        ok = (k[None, None, :] <= q) & (k[None, None, :] >= left[:, None, None])
        if window:
            ok &= k[None, None, :] > q - window
        ok |= k[None, None, :] == q
        return ok[:, None]

    # -- the forward pass ------------------------------------------------------------------------------------
    def forward(self, ids: torch.Tensor, positions: torch.Tensor, left: torch.Tensor, first_slot: torch.Tensor, keys: int) -> torch.Tensor:
        """Runs `ids` [B, T] (at slots first_slot .. first_slot + T - 1, positions [B, T]) through the model, writes
        their K and V into the cache, and returns the last position's logits [B, V] (float32)."""
        B, T = ids.shape
        cache = self.kv
        q_slots = first_slot + torch.arange(T, device=ids.device)
        masks: dict[int | None, torch.Tensor] = {}
        if self.gpt2:
            h = self.dec.wte(ids) + self.dec.wpe(positions)
            rope = None
        else:
            h = self.dec.embed_tokens(ids)
            rope = self.dec.rotary_emb(h, positions)
        for i, layer in enumerate(self.layers):
            w = self.windows[i]
            if w not in masks:
                masks[w] = self.mask(left, q_slots, keys, w)
            h = self._layer(i, layer, h, rope, q_slots, masks[w], keys, cache, B, T)
        h = self.dec.ln_f(h[:, -1]) if self.gpt2 else self.dec.norm(h[:, -1])
        logits: torch.Tensor = self.head(h).float()
        return logits

    def _layer(
        self,
        i: int,
        layer: Any,
        h: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor] | None,
        q_slots: torch.Tensor,
        mask: torch.Tensor,
        keys: int,
        cache: KVCache,
        B: int,
        T: int,
    ) -> torch.Tensor:
        """One decoder layer (`layer`: the family's block, its modules named by the family) over the cache."""
        if self.gpt2:
            attn = layer.attn
            x = layer.ln_1(h)
            q, k, v = attn.c_attn(x).split(attn.split_size, dim=2)
            out_proj, post_norm, mlp = attn.c_proj, layer.ln_2, layer.mlp
        else:
            attn = layer.self_attn
            x = layer.input_layernorm(h)
            q, k, v = attn.q_proj(x), attn.k_proj(x), attn.v_proj(x)
            out_proj, post_norm, mlp = attn.o_proj, layer.post_attention_layernorm, layer.mlp
        q = q.view(B, T, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        if rope is not None:
            cos, sin = rope[0].unsqueeze(1), rope[1].unsqueeze(1)
            q = q * cos + _rotate_half(q) * sin
            k = k * cos + _rotate_half(k) * sin
        cache.k[i, :B].index_copy_(2, q_slots, k.to(cache.k.dtype))
        cache.v[i, :B].index_copy_(2, q_slots, v.to(cache.v.dtype))
        K, V = cache.k[i, :B, :, :keys], cache.v[i, :B, :, :keys]
        o = F.scaled_dot_product_attention(q, K, V, attn_mask=mask, scale=attn.scaling, enable_gqa=self.kv_heads != self.heads)
        h = h + out_proj(o.transpose(1, 2).reshape(B, T, self.heads * self.head_dim))
        out: torch.Tensor = h + mlp(post_norm(h))
        return out
