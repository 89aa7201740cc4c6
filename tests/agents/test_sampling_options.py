"""Per-mode penalties and truncation, the user's settings on top, reaching ``Engine.generate``."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agents.sampling import MODE_PENALTIES, generation_options
from app.settings import ConfigError, Settings, load
from engine import Done
from engine.decoding.penalties import Penalties

ROOT = Path(__file__).resolve().parents[2]


def test_modes_defaults_and_the_users_knobs_on_top():
    s = Settings()
    assert generation_options(s, "summarizer")["penalties"] == MODE_PENALTIES["summarizer"]
    assert generation_options(s, "ui") == {"penalties": None, "top_k": 0, "min_p": 0.0}
    mine = Settings(repeat_penalty=1.3, dry_multiplier=0.0, top_k=5, min_p=0.1)
    opts = generation_options(mine, "assistant")
    assert opts["penalties"].repeat_penalty == 1.3 and opts["penalties"].dry_multiplier == 0.0
    assert (opts["top_k"], opts["min_p"]) == (5, 0.1)
    # every knob back at neutral: no penalties at all (the engine then does no extra work)
    off = Settings(repeat_penalty=1.0, frequency_penalty=0.0, presence_penalty=0.0, dry_multiplier=0.0)
    assert generation_options(off, "summarizer")["penalties"] is None
    # the UI agent's constrained output keeps no user penalty (ids legitimately repeat)
    assert generation_options(mine, "ui")["penalties"] is None


def test_settings_read_the_knobs_from_flags_env_and_file(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("dry_multiplier = 1.2\nrepeat_last_n = -1\n")
    s = load(path, env={"HEXA_MIN_P": "0.05"}, flags={"repeat_penalty": "1.15", "top_k": "20"}).settings
    assert (s.dry_multiplier, s.repeat_last_n, s.min_p, s.repeat_penalty, s.top_k) == (1.2, -1, 0.05, 1.15, 20)
    assert Settings().repeat_penalty is None           # unset: the mode decides
    with pytest.raises(ConfigError, match="--repeat-penalty 9"):
        load(tmp_path / "none.toml", env={}, flags={"repeat_penalty": "9"})
    with pytest.raises(ConfigError, match="HEXA_DRY_BASE"):
        load(tmp_path / "none.toml", env={"HEXA_DRY_BASE": "0.5"})


def test_cli_rejects_a_bad_penalty_in_one_line():
    r = subprocess.run([sys.executable, "-m", "app.cli", "ask", "--frequency-penalty", "-1", "hi"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "--frequency-penalty" in r.stderr


def test_engine_rejects_bad_knobs_with_an_engine_error(engine):
    from engine.errors import EngineError

    with pytest.raises(EngineError, match="repeat_penalty"):
        engine.generate("hi", penalties=Penalties(repeat_penalty=0.0))
    with pytest.raises(EngineError, match="min_p"):
        engine.generate("hi", min_p=1.5)


def test_the_summarizers_defaults_reach_the_real_engine(engine, monkeypatch):
    """The summarizer's request runs with its mode's penalties (seen by the real engine)."""
    from agents.summarizer import Summarizer

    seen = []
    real = engine.generate

    def spy(*args, **kw):
        seen.append(kw)
        return real(*args, **kw)

    monkeypatch.setattr(engine, "generate", spy)
    summ = Summarizer(engine, None, Settings(max_tokens=8))
    ids = engine.chat_ids([{"role": "user", "content": "Summarize: the pumps failed, the pumps failed."}])
    done = [ev for ev in summ._run(ids, 8, [], None) if isinstance(ev, Done)][0]
    assert done.new_tokens >= 1
    assert seen[0]["penalties"] == MODE_PENALTIES["summarizer"]


def test_bench_runs_a_method_with_a_modes_options_and_counts_loops():
    from app.cli.bench import mode_options
    from engine.bench.methods import EngineMethod, make_method
    from engine.bench.runner import has_repeated_ngram
    from engine.errors import EngineError

    opts = mode_options(["vanilla", "hexa@summarizer"], Settings())
    assert list(opts) == ["hexa@summarizer"] and opts["hexa@summarizer"]["penalties"] == MODE_PENALTIES["summarizer"]
    runner = make_method("hexa@summarizer", object(), opts["hexa@summarizer"])
    assert isinstance(runner, EngineMethod) and runner.method == "hexa" and runner.options["top_k"] == 40
    with pytest.raises(EngineError, match="unknown mode"):
        mode_options(["hexa@poet"], Settings())
    with pytest.raises(EngineError, match="unknown bench method"):
        make_method("pld@summarizer", object(), {})
    loop = "The report also included details about the pumps. " * 2
    assert has_repeated_ngram(loop) and not has_repeated_ngram("one two three four five six seven eight nine")
