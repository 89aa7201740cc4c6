"""Thread settings that must happen before torch is imported.

Measured on a 2-core machine: while another process held one core, OpenMP's spin-waiting made each
forward pass 3-10x slower; a passive wait policy removed that. So the policy is set before the
first ``import torch`` anywhere in hexa (engine/__init__ imports this module first).

The thread count itself is a setting (``HEXA_THREADS``, read by the app's settings, which pass it
to ``Engine.load``); the engine does not read the environment for it.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def configure(threads: int | None = None) -> int:
    """Set torch's intra-op thread count: ``threads``, or every usable core when None."""
    import torch

    n = threads or usable_cores()
    torch.set_num_threads(n)
    return n
