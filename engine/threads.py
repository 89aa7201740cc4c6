"""Thread settings that must happen before a threaded library loads.

Measured on a 2-core machine: while another process held one core, OpenMP's spin-waiting made each
forward pass 3-10x slower (torch's, when the engine ran on it); a passive wait policy removed that.
So the policy is set before any OpenMP library loads (engine/__init__ imports this module first).

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
    """Set numpy's BLAS threads (the reference layers' products): ``threads``, or every usable
    core when None. The native kernels take their count from the engine."""
    from threadpoolctl import threadpool_limits

    n = threads or usable_cores()
    threadpool_limits(n, user_api="blas")
    return n


def quiet_blas() -> None:
    """One BLAS thread while the native kernels run the products (what is left for numpy's BLAS is
    small: calibration's extra head rows). OpenBLAS's threads spin after each call (99-104 ms of CPU
    burned in a 300 ms sleep after one small product), and on two cores they took one from the
    native pool: a 256-token prefill chunk right after a 256 x 576 x 75
    numpy product took 270 ms against 220 (median of 12, 2026-11-28), which made calibrating
    prefill 15-25% slower than prefill without it."""
    configure(1)
