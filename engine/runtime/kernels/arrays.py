"""numpy arrays as the native kernels take them: raw pointers, C order, strides in elements."""
from __future__ import annotations

import numpy as np


def ptr(a: np.ndarray | None) -> int | None:
    """The address of ``a``'s first element (None for None): the kernels' pointer arguments."""
    return None if a is None else a.ctypes.data


def contiguous(a: np.ndarray | None) -> np.ndarray | None:
    """``a`` itself when it is in C order, else a C-ordered copy (None stays None)."""
    return None if a is None else np.ascontiguousarray(a)


def strides(a: np.ndarray) -> tuple[int, ...]:
    """``a``'s strides in elements, as the kernels count them (numpy's are in bytes)."""
    return tuple(s // a.itemsize for s in a.strides)
