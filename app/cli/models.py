"""``hexa models``: the models found on this machine (see ``model_catalog``)."""
from __future__ import annotations

import json
from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser("models", help="list the GGUF files and model folders found on this machine",
                       description="The embedded default, GGUFs and model folders in the data folder's "
                                   "`models` folder, the Hugging Face cache, hexa's converted models and "
                                   "the paths loaded before; use one with --model PATH or in Settings (F8).")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--all", action="store_true", help="also the models hexa cannot run")
    p.set_defaults(func=cmd_models, uses_settings=True)


def cmd_models(args) -> int:
    from ..model_catalog import find_models

    models = find_models(args.locations)
    if not args.all:
        hidden = sum(not m.supported for m in models)
        models = [m for m in models if m.supported]
    if args.json:
        print(json.dumps([m.as_dict() for m in models], indent=1))
        return 0
    configured = args.loaded.settings.model
    current = str(Path(configured).expanduser().resolve()) if configured else ""
    print(f"  {'SIZE':>8}  {'ARCH':<8} {'QUANT':<8} {'WHERE':<11} MODEL")
    for m in models:
        mark = "*" if (str(Path(m.path).resolve()) if m.path else "") == current else " "
        size = f"{m.size_mb:,.0f} MB" if m.size_mb >= 1 else "<1 MB"
        line = f"{mark} {size:>8}  {m.architecture:<8} {m.quant:<8} {m.where:<11} {m.path or m.name}"
        print(line + (f"  ({m.problem})" if m.problem else ""))
    if not args.all and hidden:
        print(f"({hidden} more that hexa cannot run: hexa models --all)")
    print(f"(put models in {args.locations.data / 'models'}; * is the configured one)")
    return 0
