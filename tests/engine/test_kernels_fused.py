"""One native call per forward pass: the same bits as the per-op path; the binding read from
hexa.h agrees with what the C compiler sees; the packed model file round-trips."""
from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from engine.model import packed_weights
from engine.events import Done
from engine.runtime.kernels import KERNELS, host_isa
from engine.runtime.kernels.binding import HEADER, Header

pytestmark = pytest.mark.skipif(host_isa()[1] is not None, reason=f"{host_isa()[1]}")


def _pass(model, S: int, context: int, fused: bool):
    """Hidden states of S new tokens after ``context`` cached ones, and the cache rows written
    (the per-op path is the fp32 reference, so both run exact)."""
    saved, exact = model.fused, model.exact
    model.fused, model.exact = saved if fused else None, True
    try:
        cache = model.new_cache(context + S + 4)
        model.forward(np.arange(100, 100 + context), np.arange(context), cache)
        cache.commit(context)
        mask = None
        if S > 1:   # a tree: node i sees the context, itself and every other odd/even node before it
            tree = np.tri(S, dtype=bool) & ((np.arange(S)[:, None] - np.arange(S)) % 2 == 0)
            mask = np.concatenate([np.ones((S, context), dtype=bool), tree], 1)
        hidden = model.forward(np.arange(7, 7 + S), context + np.arange(S) // 2, cache, mask)
        return hidden, cache.k[:, :, :context + S].copy(), cache.v[:, :, :context + S].copy()
    finally:
        model.fused, model.exact = saved, exact


@pytest.mark.parametrize("S", [1, 2, 7, 13, 33, 64])
def test_fused_pass_gives_the_per_op_paths_bits(real_engine, S):
    model = real_engine.model
    assert model.fused is not None
    for a, b in zip(_pass(model, S, 37, fused=True), _pass(model, S, 37, fused=False)):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("exact", [False, True])
def test_a_tree_row_equals_a_plain_step_in_the_fused_pass(real_engine, exact, monkeypatch):
    """Rows 0 and 1 of a 2-token causal pass are the two plain steps, bit for bit, in the
    decoding arithmetic (integer dot products) and in the exact one."""
    model = real_engine.model
    monkeypatch.setattr(model, "exact", exact)
    cache = model.new_cache(64)
    model.forward(np.arange(100, 120), np.arange(20), cache)
    cache.commit(20)
    both = model.forward(np.array([5, 6]), np.array([20, 21]), cache, np.tri(2, 22, 20, dtype=bool))
    first = model.forward(np.array([5]), np.array([20]), cache)
    cache.commit(1)
    second = model.forward(np.array([6]), np.array([21]), cache)
    assert np.array_equal(both[0], first[0]) and np.array_equal(both[1], second[0])


def test_every_exported_function_is_declared_in_the_header(kernel):
    """The .so exports exactly the header's functions (nm), and each binding has the header's arity."""
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    lib = Path(kernel.library_path)
    out = subprocess.run([nm, "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if " T hexa_" in line}
    assert exported == set(HEADER.functions)
    for name, (params, argtypes, _) in HEADER.functions.items():
        assert len(kernel.fn[name].argtypes) == len(params) == len(argtypes)


def test_struct_layout_matches_the_c_compiler(tmp_path):
    """A probe compiled against hexa.h prints each struct field's offset and size; ctypes agrees."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    lines = []
    for name, struct in HEADER.structs.items():
        lines.append(f'printf("{name} size %zu\\n", sizeof(struct {name}));')
        for field, _ in struct._fields_:
            lines.append(f'printf("{name}.{field} %zu %zu\\n", offsetof(struct {name}, {field}), '
                         f'sizeof(((struct {name} *)0)->{field}));')
    probe = tmp_path / "probe.c"
    probe.write_text('#include <stddef.h>\n#include <stdio.h>\n#include "hexa.h"\nint main(void) {\n'
                     + "\n".join(lines) + "\nreturn 0;\n}\n")
    subprocess.run([cc, "-I", str(KERNELS), str(probe), "-o", str(tmp_path / "probe")], check=True)
    seen = subprocess.run([str(tmp_path / "probe")], capture_output=True, text=True, check=True).stdout.split("\n")
    expected = []
    for name, struct in HEADER.structs.items():
        expected.append(f"{name} size {ctypes.sizeof(struct)}")
        for field, ctype in struct._fields_:
            expected.append(f"{name}.{field} {getattr(struct, field).offset} {ctypes.sizeof(ctype)}")
    assert [s for s in seen if s] == expected


def test_a_changed_declaration_changes_the_binding(tmp_path):
    """The binding has no list of its own: edit a prototype and the argument types follow."""
    text = (KERNELS / "hexa.h").read_text().replace(
        "int64_t hexa_forward_scratch(const struct hexa_model *m, int32_t S);",
        "int64_t hexa_forward_scratch(const struct hexa_model *m, int64_t S, float extra);")
    (tmp_path / "hexa.h").write_text(text)
    _, argtypes, restype = Header.read(tmp_path / "hexa.h").functions["hexa_forward_scratch"]
    assert argtypes[1:] == [ctypes.c_int64, ctypes.c_float] and restype is ctypes.c_int64


def test_packed_model_file_round_trips_and_is_refused_for_other_weights(real_engine, tmp_path):
    model = real_engine.model
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "manifest.json").write_text('{"files": {"model.safetensors": {"sha256": "abc"}}}')
    packed_weights.save(model, folder, "build1")
    state = packed_weights.load(folder, "build1")
    assert state is not None and state["tied"]
    assert np.array_equal(state["layers"][3]["wgu"]["codes"], model.layers[3].wgu.quant)
    assert packed_weights.load(folder, "build2") is None          # another kernel layout
    (folder / "manifest.json").write_text('{"files": {"model.safetensors": {"sha256": "def"}}}')
    assert packed_weights.load(folder, "build1") is None          # other weights
    (folder / "manifest.json").write_text('{"files": {"model.safetensors": {"sha256": "abc"}}}')
    assert np.array_equal(state["layers"][0]["ln_in"], model.layers[0].ln_in) and state["norm"].dtype == np.float32
    path = packed_weights.path_for(folder, "build1")
    whole = path.read_bytes()
    path.write_bytes(whole[:-100])                                 # truncated in the last array
    assert packed_weights.load(folder, "build1") is None
    path.write_bytes(whole[:1000])                                 # truncated in the index
    assert packed_weights.load(folder, "build1") is None


def test_engine_started_from_the_packed_file_gives_the_same_tokens(real_engine):
    """The session engine was packed from fp32 or read from the packed file; a second engine on
    the same cache reads the file: both decode the same tokens."""
    from engine import Engine

    again = Engine.load(None, cache_dir=real_engine.cache_dir)
    prompt = real_engine.chat_ids([{"role": "user", "content": "Name three rivers."}])
    tokens = [next(e for e in eng.generate(prompt, max_new_tokens=12) if isinstance(e, Done)).token_ids
              for eng in (real_engine, again)]
    assert tokens[0] == tokens[1]


def test_decoding_arithmetic_is_close_to_fp32_and_batch_invariant(kernel):
    """Codes times 8-bit activations: within llama.cpp-like error of the fp32 product, and each
    row's bits independent of how many rows share the call (1 to 33, every tile remainder)."""
    from test_kernels_quant import gguf_weights   # tests/engine is on sys.path (no packages)

    from engine.runtime import reference

    g = np.random.default_rng(5)
    for fmt in ("Q4_1", "Q8_0"):
        w = gguf_weights(fmt, 70, 576, seed=1)
        packed = kernel.pack(w)
        assert packed.quant is not None and packed.data is None
        x, b = g.standard_normal((33, 576), dtype=np.float32), g.standard_normal(70, dtype=np.float32)
        ref = reference.linear(x, w, b)
        full = kernel.linear(x, packed, b, exact=False)
        assert (np.linalg.norm(full - ref) / np.linalg.norm(ref)) < 0.02
        for M in (1, 2, 3, 4, 5, 7, 33):
            assert np.array_equal(kernel.linear(x[:M], packed, b, exact=False), full[:M])
        assert np.array_equal(kernel.linear(x[20:21], packed, b, exact=False)[0], full[20])


def test_prefill_chunking_never_changes_a_bit_of_the_prompts_kv(real_engine):
    """Prefill rows are computed alone (native attention at every chunk size): a prompt's KV is
    the same in 7-token and 300-token chunks, so a request served partly from a kept prefix
    prefills exactly what a cold one would."""
    model = real_engine.model
    tokens = np.random.default_rng(2).integers(0, model.config.vocab_size, 150)
    caches = []
    for chunk in (7, 64, 300):
        cache = model.new_cache(160)
        model.begin_prefill(150)
        try:
            for s in range(0, 150, chunk):
                part = tokens[s:s + chunk]
                last = model.logits(model.forward(part, np.arange(s, s + len(part)), cache)[-1:])
                cache.commit(len(part))
        finally:
            model.end_prefill()
        caches.append((cache.k[:, :, :150].copy(), cache.v[:, :, :150].copy(), last))
    for other in caches[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(caches[0], other))


def test_prefill_gives_the_kv_decoding_steps_give(real_engine, monkeypatch):
    """With engine.prompt = int8, prefill takes the decoding arithmetic: a prompt prefilled in one
    chunk holds the very KV bits that one-token decoding steps over the same tokens write (fp32
    prefill did not). With bf16 (the default) on AMX tiles, prompt rows take bf16
    (hexa_linear_prefill): their KV is then not the steps' bits but closer to the fp32
    arithmetic's, in every layer (0.1-0.5% against the steps' 0.5-2.7% for SmolLM2-135M's K,
    2026-11-29); without the tiles it is the steps' bits."""
    model = real_engine.model
    monkeypatch.setattr(model, "prompt_bf16", False)
    tokens = np.random.default_rng(3).integers(0, model.config.vocab_size, 24)

    def kv(prompt: bool, exact: bool = False):
        monkeypatch.setattr(model, "exact", exact)
        cache = model.new_cache(32)
        if prompt:
            model.begin_prefill(24)
            try:
                model.forward(tokens, np.arange(24), cache)
            finally:
                model.end_prefill()
            cache.commit(24)
        for i in range(0 if prompt else 24):
            model.forward(tokens[i:i + 1], np.array([i]), cache)
            cache.commit(1)
        return [c[:, :, :24].astype(np.float32) for c in (cache.k, cache.v)]
    stepped = kv(False)
    assert all(np.array_equal(a, b) for a, b in zip(kv(True), stepped))
    monkeypatch.setattr(model, "prompt_bf16", True)
    prefilled = kv(True)
    if not model.native.amx:   # no bf16 tiles: the option changes nothing
        assert all(np.array_equal(a, b) for a, b in zip(prefilled, stepped))
        return
    assert not np.array_equal(prefilled[0], stepped[0])
    for p, s, f in zip(prefilled, stepped, kv(True, exact=True)):
        for layer in range(len(f)):
            assert np.linalg.norm(p[layer] - f[layer]) < np.linalg.norm(s[layer] - f[layer]), layer


def test_an_answer_continued_from_its_tokens_goes_on_as_it_would_have(real_engine, monkeypatch):
    """``continues`` (generation.prefill's ``answer``): the prompt's last tokens are the answer so
    far (a migrated one), fed as decoding fed them: the logits it goes on from are the very ones
    the uninterrupted answer's decoding step gave, with bf16 prompt rows too (fed as a prompt,
    on AMX tiles they are not)."""
    from engine.decoding.generation import prefill

    model = real_engine.model
    monkeypatch.setattr(model, "prompt_bf16", True)
    g = np.random.default_rng(4)
    prompt, answer = list(g.integers(0, model.config.vocab_size, 40)), list(g.integers(0, model.config.vocab_size, 9))
    cache = model.new_cache(64)                    # uninterrupted: the prompt, then decoding steps
    model.begin_prefill(len(prompt))
    try:
        model.forward(np.array(prompt), np.arange(len(prompt)), cache)
    finally:
        model.end_prefill()
    cache.commit(len(prompt))
    for i, t in enumerate(answer):
        stepped = model.logits(model.forward(np.array([t]), np.array([len(prompt) + i]), cache))[0]
        cache.commit(1)

    def resumed(n: int) -> np.ndarray:
        events = prefill(model, prompt + answer, model.new_cache(64), 16, None, lambda: False, answer=n)
        while True:
            try:
                next(events)
            except StopIteration as stop:
                return stop.value[0]
    assert np.array_equal(resumed(len(answer)), stepped)
    if model.native.amx:
        assert not np.array_equal(resumed(0), stepped)
