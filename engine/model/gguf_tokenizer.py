"""A GGUF's tokenizer written out as Hugging Face files (tokenizer.json and its config), by
transformers' GGUF converter, in a process of its own: run as
``python -m engine.model.gguf_tokenizer MODEL.gguf OUT_DIR``.

Why a process: the converter needs transformers, which imports torch, and a module once imported
stays resident. Done inside the engine, a model's first start left the engine at 712 MB for the
rest of the session instead of 241 (SmolLM2-135M, measured 2026-11-28); later starts read the
written files with the ``tokenizers`` library alone (``tokenizer.py``)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..errors import EngineError

TIMEOUT_S = 600   # Gemma's 262,144 tokens and 514,906 merges take ~40 s on 2 cores


def write(gguf: Path, out: Path, name: str) -> None:
    """Write ``gguf``'s tokenizer into ``out``; an ``EngineError`` in one line if it cannot."""
    try:
        run = subprocess.run([sys.executable, "-m", __name__, str(gguf), str(out)], capture_output=True,
                             text=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EngineError(f"{name}: cannot read the GGUF's tokenizer ({exc.__class__.__name__})") from None
    if run.returncode != 0:
        lines = run.stderr.strip().splitlines()
        why = lines[-1] if lines else f"the converter ended with status {run.returncode}"
        raise EngineError(f"{name}: cannot read the GGUF's tokenizer ({why[:200]})")


def main(argv: list[str]) -> int:
    gguf, out = Path(argv[0]), Path(argv[1])
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        tok.save_pretrained(out)
    except Exception as exc:   # reported by the parent in one line
        detail = (str(exc).splitlines() or ["no detail"])[0][:160]
        print(f"{exc.__class__.__name__}: {detail}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
