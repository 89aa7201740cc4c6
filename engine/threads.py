"""Thread settings that must happen before torch is imported.

Measured on a 2-core machine: while another process held one core, OpenMP's spin-waiting made each
forward pass 3-10x slower; a passive wait policy removed that. So the policy is set before the
first ``import torch`` anywhere in hexa (engine/__init__ imports this module first).
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def default_threads() -> int:
    env = os.environ.get("HEXA_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def configure(threads: int | None = None) -> int:
    """Set torch's intra-op thread count (default: the cores this process may use)."""
    import torch

    n = threads or default_threads()
    torch.set_num_threads(n)
    return n
