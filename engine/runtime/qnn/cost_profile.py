"""Device cost profiles: what each block graph costs on a real Snapdragon NPU.

The qnn backend sizes draft trees and plans progressive graph switching from measured costs. On
this x86 machine those measurements come from Qualcomm's HTP emulator, whose cost grows with the
tokens a graph feeds (an 8-token graph costs 2-4x a 1-token one); a phone's NPU runs the same
graphs in nearly constant time. A device cost profile holds, per block and static length S, the
device's compute time and load time, as AI Hub's profile jobs measured them (``hexa npu profile``)
or as a user wrote them down. ``--cost-profile FILE|DEVICE`` makes the engine plan with it.

File format (JSON, one object)::

    {"format": "hexa-device-cost-profile/1",
     "device": "Samsung Galaxy S24", "chipset": "qualcomm-snapdragon-8gen3",
     "source": "Qualcomm AI Hub profile jobs (2026-11-23)",
     "model": "SmolLM2-135M-Instruct", "graph_version": 5, "context": 1024,
     "blocks": [[0, 6], [6, 12], ...],
     "graphs": [{"block": 0, "S": 1, "compute_ms": 0.61, "load_ms": 35.0, "job": "jabc123"}, ...]}

Every (block, S) the engine runs must be present; ``job`` and extra keys are kept for reference.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import EngineError
from ...files import atomic_write

FORMAT = "hexa-device-cost-profile/1"


@dataclass(frozen=True)
class GraphCost:
    compute_ms: float            # one run of the graph on the device
    load_ms: float               # loading it (AI Hub's warm load time)
    extra: dict = field(default_factory=dict, compare=False)   # job id, peak memory, ...


@dataclass(frozen=True)
class DeviceCostProfile:
    device: str
    chipset: str
    source: str                  # where the numbers come from (AI Hub jobs, a datasheet, ...)
    model: str
    graph_version: int
    context: int
    blocks: tuple[tuple[int, int], ...]
    graphs: dict[tuple[int, int], GraphCost]     # (block index, S) -> cost

    def cost(self, block: int, S: int) -> GraphCost:
        try:
            return self.graphs[(block, S)]
        except KeyError:
            raise EngineError(f"the cost profile for {self.device} has no graph for block {block}, "
                              f"S={S} (profile it again with `hexa npu profile`)") from None

    def check_fits(self, model: str, graph_version: int, context: int,
                   blocks: list[tuple[int, int]], lengths: tuple[int, ...]) -> None:
        """Refuse, in one line, a profile made for other graphs than the engine runs."""
        wanted = (model, graph_version, context, tuple(map(tuple, blocks)))
        have = (self.model, self.graph_version, self.context, self.blocks)
        if wanted != have:
            names = ("model", "graph version", "context", "blocks")
            diff = next(f"{n} {h} (engine: {w})" for n, h, w in zip(names, have, wanted) if h != w)
            raise EngineError(f"the cost profile for {self.device} was made for other graphs: {diff}")
        missing = [(b, S) for b in range(len(blocks)) for S in lengths if (b, S) not in self.graphs]
        if missing:
            b, S = missing[0]
            raise EngineError(f"the cost profile for {self.device} lacks {len(missing)} graph(s), e.g. "
                              f"block {b} S={S}")

    def to_json(self) -> dict:
        return {"format": FORMAT, "device": self.device, "chipset": self.chipset, "source": self.source,
                "model": self.model, "graph_version": self.graph_version, "context": self.context,
                "blocks": [list(b) for b in self.blocks],
                "graphs": [{"block": b, "S": S, "compute_ms": c.compute_ms, "load_ms": c.load_ms, **c.extra}
                           for (b, S), c in sorted(self.graphs.items())]}

    @classmethod
    def from_json(cls, data: dict, origin: str = "cost profile") -> "DeviceCostProfile":
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise EngineError(f"{origin} is not a hexa device cost profile (format {FORMAT!r} expected)")
        try:
            graphs = {}
            for g in data["graphs"]:
                key = (int(g["block"]), int(g["S"]))
                compute, load = float(g["compute_ms"]), float(g["load_ms"])
                if not (compute > 0 and load >= 0):
                    raise ValueError(f"block {key[0]} S={key[1]}: times must be positive")
                extra = {k: v for k, v in g.items() if k not in ("block", "S", "compute_ms", "load_ms")}
                graphs[key] = GraphCost(compute, load, extra)
            return cls(device=str(data["device"]), chipset=str(data.get("chipset", "")),
                       source=str(data.get("source", "")), model=str(data["model"]),
                       graph_version=int(data["graph_version"]), context=int(data["context"]),
                       blocks=tuple((int(a), int(b)) for a, b in data["blocks"]), graphs=graphs)
        except (KeyError, TypeError, ValueError) as exc:
            raise EngineError(f"{origin} is damaged: {exc.__class__.__name__} {exc}") from None

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(self.to_json(), indent=1))


def device_slug(device: str) -> str:
    """A folder name for a device: "Samsung Galaxy S24" -> "samsung-galaxy-s24"."""
    return re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-") or "device"


def profile_path(cache_dir: Path, device: str, model: str) -> Path:
    """Where ``hexa npu profile`` stores a device's profile for a model."""
    return Path(cache_dir) / "npu" / device_slug(device) / f"{model}.cost.json"


def load(spec: str, cache_dir: Path, model: str) -> DeviceCostProfile:
    """``--cost-profile FILE|DEVICE``: a profile file, or the one profiled for DEVICE (by name)."""
    path = Path(spec).expanduser()
    origin = str(path)
    if not path.is_file():
        path = profile_path(cache_dir, spec, model)
        origin = f"the cost profile of {spec!r}"
        if not path.is_file():
            raise EngineError(f"no cost profile {spec!r}: not a file, and no device of that name has been "
                              f"profiled (run `hexa npu profile --device \"{spec}\"`)")
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise EngineError(f"cannot read {origin}: {exc.strerror or exc}") from None
    except ValueError:
        raise EngineError(f"{origin} is not valid JSON") from None
    return DeviceCostProfile.from_json(data, origin)
