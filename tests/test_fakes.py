"""The stand-ins keep the real objects' contracts: a fake that accepts what the real one refuses
would let a test pass that fails in use (``ScriptedBackend`` is held to ``Backend`` the same way,
tests/engine/test_knobs.py)."""
from __future__ import annotations

import inspect

import pytest

from engine.engine import Engine
from support.fakes import FakeEngine, HashEmbedder


def public_methods(cls) -> dict[str, inspect.Signature]:
    return {n: inspect.signature(f) for n, f in vars(cls).items() if callable(f) and not n.startswith("_")}


def test_every_fake_engine_method_has_the_engines_signature():
    fake, real = public_methods(FakeEngine), public_methods(Engine)
    assert {"generate", "encode", "decode", "chat_ids", "constraint", "index_response"} <= set(fake)
    for name, sig in fake.items():
        assert name in real, f"FakeEngine.{name} is not an Engine method"
        assert [(p.name, p.kind, p.default) for p in sig.parameters.values()] == \
               [(p.name, p.kind, p.default) for p in real[name].parameters.values()], name
    for attr in ("model_name", "backend_name", "context_window"):
        assert hasattr(FakeEngine, attr)


def test_the_fake_engine_refuses_a_keyword_the_engine_does_not_take():
    with pytest.raises(TypeError, match="max_tokens"):
        list(FakeEngine().generate("hi", max_tokens=3))


def test_the_hash_embedder_has_the_embedders_interface():
    from memory.embeddings import Embedder

    for name in ("model", "dimension", "loaded", "__call__"):
        assert hasattr(Embedder, name) and hasattr(HashEmbedder, name), name
    assert len(HashEmbedder()(["a b"])[0]) == HashEmbedder().dimension
