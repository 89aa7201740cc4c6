"""The few architecture numbers the compact transformer needs, read from a cached config.json."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class ModelConfig:
    model_type: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_eps: float
    max_positions: int
    tie_embeddings: bool
    attention_bias: bool
    rope: dict = field(default_factory=dict)
    eos_ids: tuple[int, ...] = ()
    name: str = ""
    act: str = "silu"                 # the MLP's gate activation: silu, or gelu_tanh (gemma3)
    embed_scale: float = 1.0          # the embedded tokens' factor (gemma3: sqrt(hidden))
    sliding_window: int = 0           # local layers see the last this many positions (gemma3)
    local_layers: tuple[int, ...] = ()
    rope_local_base: float = 10000.0  # local layers' RoPE base (gemma3)

    @classmethod
    def from_dict(cls, c: dict) -> "ModelConfig":
        heads = c["num_attention_heads"]
        eos = c.get("eos_token_id")
        eos_ids = tuple(eos) if isinstance(eos, list) else ((eos,) if eos is not None else ())
        rope = dict(c.get("rope_parameters") or c.get("rope_scaling") or {})
        rope.setdefault("rope_theta", c.get("rope_theta", rope.get("rope_theta", 10000.0)))
        return cls(
            model_type=c["model_type"],
            vocab_size=c["vocab_size"],
            hidden_size=c["hidden_size"],
            intermediate_size=c["intermediate_size"],
            num_layers=c["num_hidden_layers"],
            num_heads=heads,
            num_kv_heads=c.get("num_key_value_heads", heads),
            head_dim=c.get("head_dim") or c["hidden_size"] // heads,
            rms_eps=c.get("rms_norm_eps", 1e-6),
            max_positions=c.get("max_position_embeddings", 4096),
            tie_embeddings=bool(c.get("tie_word_embeddings", False)),
            # qwen2 always has q/k/v biases; llama only when attention_bias is set
            attention_bias=c["model_type"] == "qwen2" or bool(c.get("attention_bias", False)),
            rope=rope,
            eos_ids=eos_ids,
            name=c.get("hexa_name", ""),
            act=c.get("hexa_act", "silu"),
            embed_scale=float(c.get("hexa_embed_scale", 1.0)),
            sliding_window=int(c.get("sliding_window") or 0) if c.get("hexa_local_layers") else 0,
            local_layers=tuple(c.get("hexa_local_layers", ())),
            rope_local_base=float(c.get("rope_local_base_freq", 10000.0)),
        )

    def inv_freq(self, base: float | None = None) -> np.ndarray:
        """Rotary frequencies, including Llama 3's long-context rescaling (as transformers computes
        them); ``base``: another RoPE base (gemma3's local layers), without any rescaling."""
        d = self.head_dim
        if base is not None:
            return _inv_freq(base, d)
        inv = _inv_freq(float(self.rope["rope_theta"]), d)
        kind = self.rope.get("rope_type", self.rope.get("type", "default"))
        if "factors" in self.rope:   # a GGUF's rope_freqs: llama.cpp's divisors of each frequency
            inv = inv / np.asarray(self.rope["factors"], dtype=np.float32)
        elif kind == "llama3":
            factor = self.rope["factor"]
            low, high = self.rope["low_freq_factor"], self.rope["high_freq_factor"]
            old = self.rope["original_max_position_embeddings"]
            wavelen = 2 * math.pi / inv
            scaled = np.where(wavelen > old / low, inv / np.float32(factor), inv)
            smooth = (old / wavelen - low) / (high - low)
            smoothed = (1 - smooth) * scaled / np.float32(factor) + smooth * scaled
            medium = ~(wavelen < old / high) * ~(wavelen > old / low)
            inv = np.where(medium, smoothed, scaled).astype(np.float32)
        elif kind not in ("default", None):
            raise ValueError(f"unsupported rope scaling {kind!r}")
        return inv


def _inv_freq(base: float, d: int) -> np.ndarray:
    """1 / base^(2i/d) in fp32, as transformers computes it (the exponent in fp32, then the power)."""
    return (np.float32(1.0) / (np.float32(base) ** (np.arange(0, d, 2, dtype=np.float32) / np.float32(d)))
            ).astype(np.float32)
