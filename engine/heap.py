"""Giving freed memory back to the system. glibc keeps what a process frees in its heap, so a
transient peak stays resident: loading Gemma-3-270M's tokenizer (262,144 tokens, 514,906 merges)
left 314 MB resident, 116 MB after ``malloc_trim``."""
from __future__ import annotations

import ctypes
import ctypes.util
from functools import lru_cache


@lru_cache(maxsize=1)
def _malloc_trim():
    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None   # glibc only
    except OSError:
        return None


def release_freed() -> None:
    """Return the heap's free pages to the system (glibc; elsewhere nothing happens)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def available_memory() -> int | None:
    """Bytes the system can still give this process before the OOM killer steps in: /proc/meminfo's
    MemAvailable (free and reclaimable memory) plus SwapFree; None where there is no /proc
    (Windows, macOS), where nothing is checked."""
    try:
        with open("/proc/meminfo") as f:
            info = {k: int(v.split()[0]) * 1024 for k, v in (line.split(":", 1) for line in f if ":" in line)}
        return info["MemAvailable"] + info.get("SwapFree", 0)
    except (OSError, KeyError, ValueError):
        return None
