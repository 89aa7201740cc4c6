"""The llama.cpp peer's own process: greedy decoding with llama-cpp-python, driven over JSON lines.

Run as a script (``python -I llamacpp_worker.py``), importing nothing of hexa: llama.cpp's CPU
backend uses OpenMP, and in hexa's process it would share the process's OpenMP runtime, which hexa
sets to a passive wait policy (engine/threads.py); OpenMP barriers then sleep between every op and
llama.cpp decodes ~30% slower than it does alone. Here it runs as it would by itself. Every
figure is timed inside this process, like the engine's inside its own.

Requests, one JSON object a line on stdin; one reply a line on the protocol stream (stdout):
``{"cmd": "load", "gguf", "n_ctx", "threads", "n_batch", "seed"}`` -> ``{"n_ctx", "system_info"}``;
``{"cmd": "run", "ids", "max_new", "eos", "cold"}`` -> ``{"tokens", "seconds", "ttft_s",
"prefill_s", "steps", "reused", "prompt_evaluated"}``; ``{"cmd": "argmax", "ids"}`` -> ``{"token"}``
(the argmax of the logits after a cold prompt, a check of the sampling); ``{"cmd": "logits", "ids",
"path"}`` -> ``{"rows"}``: the logits after each of ``ids`` (fed one token a step, as decoding
does) saved as a float32 .npy [len(ids), vocab] at ``path``. Errors: ``{"error"}``.
"""
from __future__ import annotations

import json
import os
import sys
import time

# temp=0 makes llama-cpp-python's sampler chain [penalties, greedy]; with repeat_penalty=1 and no
# frequency/presence penalty the penalties are a no-op, so each token is the argmax of the logits.
GREEDY = {"top_k": 1, "temp": 0.0, "repeat_penalty": 1.0, "frequency_penalty": 0.0, "presence_penalty": 0.0}


class Worker:
    def __init__(self):
        self.llm = None

    def load(self, gguf: str, n_ctx: int, threads: int, n_batch: int, seed: int) -> dict:
        import llama_cpp
        from llama_cpp import Llama

        if self.llm is not None:
            self.llm.close()
            self.llm = None
        self.llm = Llama(model_path=gguf, n_ctx=n_ctx, n_batch=n_batch, n_ubatch=n_batch, n_threads=threads,
                         n_threads_batch=threads, logits_all=False, seed=seed, verbose=False)
        return {"n_ctx": self.llm.n_ctx(), "system_info": llama_cpp.llama_print_system_info().decode().strip()}

    def run(self, ids: list[int], max_new: int, eos: list[int], cold: bool) -> dict:
        import llama_cpp

        llm, stop = self.llm, set(eos)
        llama_cpp.llama_perf_context_reset(llm.ctx)
        t0 = time.perf_counter()
        reused = 0
        if cold:
            llm.reset()   # n_tokens = 0: eval() then drops every KV cell (kv_cache_seq_rm from position 0)
        else:   # keep the longest common prefix (as Llama.generate does), at least one token left to evaluate
            kept = llm.input_ids[:llm.n_tokens].tolist()
            while reused < min(len(kept), len(ids) - 1) and kept[reused] == ids[reused]:
                reused += 1
            llm.n_tokens = reused   # eval() removes the KV cells from here on
        llm.eval(ids[reused:])
        t_prefill = time.perf_counter()
        token = llm.sample(**GREEDY)
        ttft = time.perf_counter() - t0
        tokens: list[int] = []
        steps = 0
        while token not in stop:
            tokens.append(token)
            if len(tokens) >= max_new:
                break
            llm.eval([token])
            steps += 1
            token = llm.sample(**GREEDY)
        seconds = time.perf_counter() - t0
        perf = llama_cpp.llama_perf_context(llm.ctx)
        return {"tokens": tokens, "seconds": seconds, "ttft_s": ttft, "prefill_s": t_prefill - t0, "steps": steps,
                "reused": reused, "prompt_evaluated": perf.n_p_eval}

    def argmax(self, ids: list[int]) -> dict:
        import ctypes

        import llama_cpp

        llm = self.llm
        llm.reset()
        llm.eval(ids)
        n = llm.n_vocab()
        row = ctypes.cast(llama_cpp.llama_get_logits_ith(llm.ctx, -1), ctypes.POINTER(ctypes.c_float * n)).contents
        logits = list(row)
        return {"token": max(range(n), key=logits.__getitem__)}


    def logits(self, ids: list[int], path: str) -> dict:
        import ctypes

        import llama_cpp
        import numpy as np

        llm = self.llm
        llm.reset()
        n = llm.n_vocab()
        out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(len(ids), n))
        for i, token in enumerate(ids):
            llm.eval([token])
            out[i] = np.ctypeslib.as_array(ctypes.cast(llama_cpp.llama_get_logits_ith(llm.ctx, -1),
                                                       ctypes.POINTER(ctypes.c_float)), shape=(n,))
        out.flush()
        return {"rows": len(ids)}


def main() -> int:
    proto = os.fdopen(os.dup(1), "w")   # replies only: whatever the library prints goes to stderr
    os.dup2(2, 1)
    worker = Worker()
    for line in sys.stdin:
        req = json.loads(line)
        cmd = req.pop("cmd")
        if cmd == "quit":
            break
        try:
            if cmd not in ("load", "run", "argmax", "logits"):
                raise ValueError(f"unknown command {cmd!r}")
            reply = getattr(worker, cmd)(**req)
        except Exception as exc:   # reported to the client, which raises it as one line
            reply = {"error": f"{exc.__class__.__name__}: {exc}".splitlines()[0]}
        proto.write(json.dumps(reply) + "\n")
        proto.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
