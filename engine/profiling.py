"""Measure the backend's forward cost by number of tokens fed (the draft-tree sizing cost model)."""
from __future__ import annotations

import time
from bisect import bisect_left

import torch

PROFILE_SIZES = (1, 2, 4, 8, 16, 32)


class CostCurve:
    """Piecewise-linear cost in ms for feeding n tokens; extrapolates from the last segment."""

    def __init__(self, points: list[tuple[int, float]]):
        self.points = sorted(points)
        self.sizes = [n for n, _ in self.points]

    def __call__(self, n: int) -> float:
        pts = self.points
        i = bisect_left(self.sizes, n)
        if i < len(pts) and pts[i][0] == n:
            return pts[i][1]
        if i == 0:
            return pts[0][1]
        if i == len(pts):
            (n0, c0), (n1, c1) = pts[-2], pts[-1]
        else:
            (n0, c0), (n1, c1) = pts[i - 1], pts[i]
        return c0 + (c1 - c0) * (n - n0) / (n1 - n0)

    def as_dict(self) -> dict[int, float]:
        return dict(self.points)


def profile_cost_curve(model, past: int = 256, repeats: int = 3) -> CostCurve:
    """Time forward + logits for each size over a ``past``-token cache; keep each size's best time.

    Costs are made monotone (a bigger feed never costs less) so noise can't invert the ranking.
    """
    cache = model.new_cache(past + max(PROFILE_SIZES) + 1)
    model.forward(torch.randint(0, 1000, (past,)), torch.arange(past), cache)
    cache.commit(past)
    points = []
    for n in PROFILE_SIZES:
        best = float("inf")
        toks = torch.randint(0, 1000, (n,))
        for _ in range(repeats):
            t0 = time.perf_counter()
            model.logits(model.forward(toks, torch.arange(past, past + n), cache))
            best = min(best, (time.perf_counter() - t0) * 1000)
        points.append((n, best))
    for i in range(1, len(points)):
        points[i] = (points[i][0], max(points[i][1], points[i - 1][1]))
    return CostCurve(points)
