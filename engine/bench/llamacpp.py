"""llama.cpp as a peer: the same prompt ids, decoded greedily by llama-cpp-python on the same GGUF.

Optional (``pip install -e .[peers]`` builds llama-cpp-python from source). llama.cpp runs in a
process of its own (``llamacpp_worker.py``, why: see there), started once per GGUF and thread
count and kept for the whole benchmark; it times every run itself. Each run starts cold (no KV
prefix kept from the previous run) unless asked to keep it (``cold=False``, the multi-turn
benchmark), where it reuses the longest common prefix the way ``Llama.generate`` does.
"""
from __future__ import annotations

import atexit
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import EngineError
from .result import RunResult

INSTALL = ("bench method 'llamacpp' needs llama-cpp-python, which is not installed: "
           "`pip install -e .[peers]` (builds it from source; needs a C++ compiler and cmake)")
WORKER = Path(__file__).with_name("llamacpp_worker.py")
N_BATCH = 512
SEED = 0


def engine_gguf(engine) -> Path:
    """The GGUF file the engine was loaded from."""
    source = getattr(engine, "source", None)
    if source is None or source.kind != "gguf" or source.path is None:
        what = f"a {source.kind} model" if source is not None else "not loaded from a known source"
        raise EngineError(f"bench method 'llamacpp' runs the GGUF the engine loaded, but the engine's model is "
                          f"{what}; pass --model FILE.gguf")
    return Path(source.path)


class Worker:
    """The llama.cpp process: one JSON request a line in, one reply a line out."""

    def __init__(self):
        env = dict(os.environ)
        # hexa's passive OpenMP wait policy (engine/threads.py) is for hexa's own process;
        # llama.cpp runs with its own default
        env.pop("OMP_WAIT_POLICY", None)
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([sys.executable, "-I", str(WORKER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)
        atexit.register(self.close)

    def ask(self, cmd: str, **kwargs) -> dict:
        try:
            self.proc.stdin.write(json.dumps({"cmd": cmd, **kwargs}) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except OSError:
            line = ""
        if not line:
            raise EngineError(f"the llama.cpp process ended ({self.death()})")
        reply = json.loads(line)
        if "error" in reply:
            raise EngineError(f"llama.cpp: {reply['error']}")
        return reply

    def death(self) -> str:
        """Why the process ended: the signal that killed it (a crash in llama.cpp's native code,
        such as the AMX int8 path of a GGML_NATIVE=ON build, dies by SIGSEGV and prints nothing),
        its exit code, and its last line of output, if any."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self.log.seek(0)
        tail = [s for s in self.log.read().splitlines() if s.strip()][-1:]
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            why = f"killed by {name}"
            if -code in (signal.SIGSEGV, signal.SIGILL, signal.SIGBUS):
                why += (": llama.cpp crashed in its native code; on CPUs with AMX, build llama-cpp-python "
                        "with GGML_NATIVE=OFF (see README, Benchmarks)")
        elif code is not None:
            why = f"exit code {code}"
        else:
            why = "it stopped answering"
        return f"{why}; last output: {tail[0][:200]}" if tail else f"{why}; no output"

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class LlamaCppMethod:
    _workers: dict[tuple[str, int], tuple[Worker, dict]] = {}   # (gguf, threads) -> (process, its load reply)

    def __init__(self, engine):
        if importlib.util.find_spec("llama_cpp") is None:
            raise EngineError(INSTALL)
        self.gguf = engine_gguf(engine)
        self.threads = engine.threads
        self.key = (str(self.gguf.resolve()), self.threads)
        self.eos = sorted(engine.eos_ids)
        if self.key not in self._workers:
            self._workers[self.key] = (Worker(), {})
            try:
                self._load(engine.context_window)
            except EngineError:
                self._workers.pop(self.key)[0].close()
                raise
        self.worker = self._workers[self.key][0]

    def _load(self, n_ctx: int) -> None:
        worker, info = self._workers[self.key]
        info.clear()
        try:
            loaded = worker.ask("load", gguf=str(self.gguf), n_ctx=n_ctx, threads=self.threads, n_batch=N_BATCH,
                                seed=SEED)
        except EngineError as exc:   # e.g. a llama-cpp-python whose library does not load
            raise EngineError(f"bench method 'llamacpp' cannot load {self.gguf.name}: {exc} "
                              f"(a broken llama-cpp-python: `pip install -e .[peers]` again)") from None
        info.update(loaded, threads=self.threads, n_batch=N_BATCH, omp_wait_policy="default")

    @property
    def info(self) -> dict:
        """What the worker reported on loading: ``n_ctx``, llama.cpp's ``system_info``."""
        return self._workers[self.key][1]

    def run(self, ids: list[int], max_new: int, history: list[list[int]], cold: bool = True,
            session: bool = False) -> RunResult:
        # ``session`` needs nothing here: llama.cpp's context keeps every token it saw until the next run
        need = len(ids) + max_new
        if self.info["n_ctx"] < need:   # room for prompt + max_new, like the engine's cache
            self._load(-(-need // 1024) * 1024)
        r = self.worker.ask("run", ids=list(ids), max_new=max_new, eos=self.eos, cold=cold)
        tokens, steps = r["tokens"], r["steps"]
        return RunResult(tokens, r["seconds"], steps, (len(tokens) - 1) / steps if steps else 0.0, r["ttft_s"],
                         {"prefill_ms": r["prefill_s"] * 1000, "ttft_ms": r["ttft_s"] * 1000,
                          "reused_tokens": r["reused"], "prompt_evaluated": r["prompt_evaluated"]})

    def argmax(self, ids: list[int]) -> int:
        """The argmax of llama.cpp's logits after ``ids`` (cold): checks that its sampling is greedy."""
        return self.worker.ask("argmax", ids=list(ids))["token"]
