"""The engine process runs a GGUF without torch: torch's import alone held ~226 MB resident, more
than the embedded model and its KV cache together (docs/engine.md, "Memory")."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.errors import EngineError
from engine.model import gguf_tokenizer

ROOT = Path(__file__).resolve().parents[2]

FIRST_START = """
import json, resource, sys
from pathlib import Path
from engine import Engine
e = Engine.load(None, Path(sys.argv[1]), threads=1)
ids = [ev for ev in e.generate("Name a colour.", max_new_tokens=8, method="hexa")][-1].token_ids
print(json.dumps({"torch": "torch" in sys.modules, "transformers": "transformers" in sys.modules,
                  "tokens": len(ids), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""


@pytest.mark.slow
def test_a_first_start_from_the_gguf_and_its_decoding_import_no_torch(engine, tmp_path):
    """A fresh model cache: the tokenizer is read from the GGUF (in a process of its
    own), the weights packed from its codes, then one request decoded; the engine's process never
    imported torch or transformers."""
    if engine.model.native is None:
        pytest.skip("no native kernels here: the reference layers convert the GGUF with transformers")
    (tmp_path / "kernels").symlink_to(engine.cache_dir / "kernels", target_is_directory=True)
    run = subprocess.run([sys.executable, "-c", FIRST_START, str(tmp_path)], capture_output=True, text=True,
                         cwd=ROOT, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["tokens"] == 8 and not out["torch"] and not out["transformers"], out
    folder = next((tmp_path / "models").glob("*-gguf"))
    assert (folder / "tokenizer.json").is_file() and list(folder.glob("packed-*.safetensors"))


def test_a_gguf_whose_tokenizer_cannot_be_read_is_one_line(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 60)
    with pytest.raises(EngineError) as info:
        gguf_tokenizer.write(bad, tmp_path / "out", "broken.gguf")
    message = str(info.value)
    assert message.startswith("broken.gguf: cannot read the GGUF's tokenizer (") and "\n" not in message
    assert "Traceback" not in message
