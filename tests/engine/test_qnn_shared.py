"""Weight-shared QNN context binaries for real Snapdragons, and the choice between them and the
emulator's separate binaries. Writing a shared binary works on x86-64 (checked here on a small
model, through the engine's own graph builder); loading one needs the NPU (the emulator segfaults),
so no test loads one."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.errors import EngineError
from engine.model.config import ModelConfig
from engine.runtime.qnn import shared
from engine.runtime.qnn.shared import SOCS, choose_layout, detect_soc, export_layout, resolve_soc
from engine.runtime.transformer import CompactTransformer


# ---- which Snapdragon, which layout
def test_soc_ids_and_part_numbers_resolve_to_the_checked_table():
    assert resolve_soc("57") == resolve_soc("SM8650") == resolve_soc(" sm8650 ")
    s = resolve_soc("69")
    assert (s.chip, s.arch) == ("SM8750", "79")
    assert (resolve_soc("60").chip, resolve_soc("60").arch) == ("SC8380XP", "73")
    assert len({s.id for s in SOCS}) == len({s.chip for s in SOCS}) == len(SOCS)


@pytest.mark.parametrize("bad", ["99", "SM9999", "", "8gen3", "57; rm"])
def test_a_bad_soc_is_a_one_line_error_naming_the_known_ones(bad):
    with pytest.raises(EngineError, match="--soc .* is not a Snapdragon hexa knows") as info:
        choose_layout(bad, machine="x86_64")
    assert "\n" not in str(info.value) and "57 SM8650" in str(info.value)
    with pytest.raises(EngineError):
        export_layout(bad)


def test_the_engine_reads_no_qnn_variable(monkeypatch):
    """HEXA_QNN_SOC is the settings' older name for soc, HEXA_QNN_SHARED for qnn.shared
    (tests/app/test_settings_advanced.py): the layout follows its arguments only."""
    monkeypatch.setenv("HEXA_QNN_SOC", "43")
    monkeypatch.setenv("HEXA_QNN_SHARED", "1")
    assert choose_layout(None, machine="x86_64") == choose_layout("57", machine="x86_64")
    assert choose_layout(None, machine="x86_64").soc.chip == "SM8650"


def test_the_emulator_runs_separate_binaries_even_for_a_named_device():
    plain = choose_layout(None, machine="x86_64")
    assert (plain.shared, plain.soc.id, plain.note) == (False, "57", "")
    assert choose_layout("57", machine="AMD64").note == ""      # the emulator's default: nothing to say
    device = choose_layout("69", machine="x86_64")
    assert not device.shared and device.soc.chip == "SM8750"
    assert "hexa npu build --soc 69" in device.note and "\n" not in device.note


def test_asking_the_emulator_for_shared_binaries_is_a_one_line_error():
    with pytest.raises(EngineError, match="only load on a Snapdragon NPU") as info:
        choose_layout("69", machine="x86_64", shared=True)
    assert "\n" not in str(info.value)
    assert not choose_layout("69", machine="x86_64", shared=False).shared


def test_on_a_snapdragon_the_graphs_are_weight_shared(monkeypatch):
    named = choose_layout("60", machine="ARM64")                 # Windows on Snapdragon spells it so
    assert named.shared and named.soc.chip == "SC8380XP" and named.note == ""
    found = choose_layout(None, machine="aarch64", detected=resolve_soc("69"))
    assert found.shared and found.soc.chip == "SM8750"
    monkeypatch.setattr(shared, "detect_soc", lambda: None)
    unknown = choose_layout(None, machine="aarch64")
    assert unknown.shared and unknown.soc.id == "57" and "pass --soc" in unknown.note
    # qnn.shared = false: the way back to separate binaries
    assert not choose_layout("60", machine="aarch64", shared=False).shared
    assert export_layout("60").shared                            # an export is shared regardless


def test_the_snapdragon_is_recognised_from_what_the_os_says():
    assert detect_soc(["Snapdragon(R) X Elite - X1E78100 - Qualcomm(R) Oryon(TM) CPU"]).id == "60"
    assert detect_soc(["SM8650\n"]).id == "57"
    assert detect_soc(["SM86500"]) is None                       # whole part numbers only
    assert detect_soc(["Intel(R) Core(TM) i7", ""]) is None


def test_provider_options_give_the_soc_and_its_architecture():
    from engine.runtime.qnn.session import provider_options

    opts = provider_options(resolve_soc("69"))
    assert (opts["soc_model"], opts["htp_arch"], opts["enable_htp_fp16_precision"]) == ("69", "79", "1")
    assert provider_options()["soc_model"] == "57"


# ---- cache folders
def test_the_cache_folder_names_soc_and_layout_and_takes_over_unnamed_graphs(tmp_path):
    pytest.importorskip("onnxruntime_qnn")
    from engine.runtime.qnn.runtime import _prune_stale, graph_folder

    model = "Tiny-1"
    emu = graph_folder(tmp_path, model, choose_layout(None, machine="x86_64"))
    dev = graph_folder(tmp_path, model, export_layout("69"))
    assert emu.name.startswith(f"{model}-sm8650-separate-") and dev.name.startswith(f"{model}-sm8750-shared-")
    key = emu.name.rsplit("-", 1)[1]
    # graphs cached before folders named their SoC: the same hash means the same graphs
    unnamed = tmp_path / "qnn" / f"{model}-{key}"
    (unnamed / "block00-06_s1_c64.ctx.onnx").parent.mkdir(parents=True)
    (unnamed / "block00-06_s1_c64.ctx.onnx").write_text("x")
    stale = [tmp_path / "qnn" / f"{model}-0123456789ab", emu.with_name(emu.name[:-12] + "0" * 12)]
    for d in stale + [dev]:
        d.mkdir(parents=True)
    other_model = tmp_path / "qnn" / f"{model}-2-{key}"
    other_model.mkdir()
    _prune_stale(emu, model)
    assert (emu / "block00-06_s1_c64.ctx.onnx").read_text() == "x" and not unnamed.exists()
    assert not any(d.exists() for d in stale)
    assert dev.is_dir() and other_model.is_dir()       # another SoC's export, another model: kept


def test_a_bad_soc_stops_the_qnn_backend_before_any_graph_work(tmp_path):
    pytest.importorskip("onnxruntime_qnn")
    from engine.runtime.qnn.runtime import QnnTransformer

    with pytest.raises(EngineError, match="--soc 'SM0000'"):
        QnnTransformer(tiny_model(), tmp_path, "Tiny", 32, soc="SM0000")
    assert not (tmp_path / "qnn").exists()


def test_the_engine_never_loads_a_shared_binary_on_the_emulator(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime_qnn")
    from engine.runtime.qnn import session

    monkeypatch.setattr(session, "real_npu", lambda: False)
    built = []
    source = session.GraphSource(built.append, resolve_soc("69"), rebuild_block=lambda: built.append("all"))
    with pytest.raises(EngineError, match="only load on a Snapdragon NPU"):
        session.load_graph(tmp_path / "b_s1.ctx.onnx", source)
    assert built == []


# ---- writing weight-shared binaries (x86-64 can write them)
def tiny_model(layers: int = 2, hidden: int = 256, inter: int = 512) -> CompactTransformer:
    heads, kv, dim = 4, 2, 64
    config = ModelConfig("llama", vocab_size=64, hidden_size=hidden, intermediate_size=inter,
                         num_layers=layers, num_heads=heads, num_kv_heads=kv, head_dim=dim, rms_eps=1e-5,
                         max_positions=128, tie_embeddings=True, attention_bias=False,
                         rope={"rope_theta": 10000.0})
    g = np.random.default_rng(0)
    shapes = {"model.embed_tokens.weight": (64, hidden), "model.norm.weight": (hidden,)}
    for i in range(layers):
        p = f"model.layers.{i}."
        shapes |= {p + "input_layernorm.weight": (hidden,), p + "post_attention_layernorm.weight": (hidden,),
                   p + "self_attn.q_proj.weight": (heads * dim, hidden),
                   p + "self_attn.k_proj.weight": (kv * dim, hidden),
                   p + "self_attn.v_proj.weight": (kv * dim, hidden),
                   p + "self_attn.o_proj.weight": (hidden, heads * dim),
                   p + "mlp.gate_proj.weight": (inter, hidden), p + "mlp.up_proj.weight": (inter, hidden),
                   p + "mlp.down_proj.weight": (hidden, inter)}
    return CompactTransformer(config, {k: g.standard_normal(s, dtype=np.float32) * np.float32(0.05)
                                       for k, s in shapes.items()}, "numpy")


def _ep_nodes(ctx: Path) -> list[dict]:
    import onnx

    model = onnx.load(str(ctx))
    return [{"name": n.name, **{a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}}
            for n in model.graph.node if n.op_type == "EPContext"]


def test_each_block_becomes_one_binary_holding_all_its_graphs_and_one_weight_copy(tmp_path):
    pytest.importorskip("onnxruntime_qnn")
    from engine.runtime.qnn.runtime import write_shared_binaries

    cpu = tiny_model()
    lengths = (1, 8, 16)
    notes = []
    bins = write_shared_binaries(cpu, tmp_path, "Tiny", 32, "69", prefill_length=16, decode_lengths=(1, 8),
                                 block_layers=1, progress=notes.append)
    folder = bins[0].parent
    assert [b.name for b in bins] == ["block00-01_c32.bin", "block01-02_c32.bin"]
    assert folder.name.startswith("Tiny-sm8750-shared-") and len(notes) == 2
    assert sorted(p.name for p in folder.glob("*.bin")) == [b.name for b in bins]
    assert not list(folder.glob(".build-*"))                     # no leftovers

    graph_names = set()
    fp16_weights = 2 * sum(w.size for w in (cpu.layers[0].wqkv, cpu.layers[0].wo,
                                            cpu.layers[0].wgu, cpu.layers[0].wdown))
    for bi, (a, b) in enumerate([(0, 1), (1, 2)]):
        blob = bins[bi].read_bytes()
        names = set()
        for S in lengths:
            ctx = folder / f"block{a:02d}-{b:02d}_s{S}_c32.ctx.onnx"
            (node,) = _ep_nodes(ctx)
            assert node["embed_mode"] == 0 and node["main_context"] == 1
            assert node["ep_cache_context"] == bins[bi].name.encode()    # every graph: the same .bin
            assert node["name"].encode() in blob                         # which holds the graph
            names.add(node["name"])
        assert len(names) == len(lengths)
        graph_names |= names
        # three graphs, one copy of the block's weights (separate binaries hold one copy each)
        assert fp16_weights < len(blob) < 1.5 * fp16_weights, (len(blob), fp16_weights)
        assert b"soc_type=SM8750;arch=79" in blob
    assert len(graph_names) == 2 * len(lengths)       # unique in the process-wide pool of shared graphs

    before = {p: p.stat().st_mtime_ns for p in folder.iterdir()}
    assert write_shared_binaries(cpu, tmp_path, "Tiny", 32, "69", prefill_length=16, decode_lengths=(1, 8),
                                 block_layers=1, progress=notes.append) == bins
    assert len(notes) == 2 and {p: p.stat().st_mtime_ns for p in folder.iterdir()} == before   # kept

    (folder / "block01-02_s8_c32.ctx.onnx").unlink()             # a lost graph rebuilds its block
    write_shared_binaries(cpu, tmp_path, "Tiny", 32, "69", prefill_length=16, decode_lengths=(1, 8),
                          block_layers=1, progress=notes.append)
    assert len(notes) == 3 and (folder / "block01-02_s8_c32.ctx.onnx").is_file()
    assert sorted(p.name for p in folder.glob("*.bin")) == [b.name for b in bins]


def test_on_the_emulator_a_named_device_gets_separate_graphs_that_run(tmp_path):
    pytest.importorskip("onnxruntime_qnn")
    from engine.runtime.qnn.runtime import QnnTransformer

    if shared.real_npu():
        pytest.skip("this machine has the NPU: --soc there means weight-shared binaries")
    cpu, notes = tiny_model(), []
    q = QnnTransformer(cpu, tmp_path, "Tiny", 32, prefill_length=16, decode_lengths=(1, 8), block_layers=1,
                       progress=notes.append, soc="SM8750")
    assert notes[0].startswith("--soc 69: the emulator here runs separate SM8750 graphs")
    assert "soc 69 SM8750, separate context binaries" in q.kernel and q.progressive
    assert q.folder.name.startswith("Tiny-sm8750-separate-") and not list(q.folder.glob("*.bin"))
    ids = np.array([3, 1, 4, 1, 5], np.int64)
    out = q.forward(ids, np.arange(5, dtype=np.int64), q.new_cache(32))
    ref = cpu.forward(ids, np.arange(5, dtype=np.int64), cpu.new_cache(32))
    assert np.allclose(out, ref, atol=2e-3 * float(np.abs(ref).max()))   # fp16 on the emulated SM8750


def test_the_engine_on_a_snapdragon_compiles_each_block_into_one_binary_first(tmp_path, monkeypatch):
    """The device path up to loading, which the emulator cannot do: the engine says so, no crash."""
    pytest.importorskip("onnxruntime_qnn")
    from engine.runtime.qnn import runtime

    if shared.real_npu():
        pytest.skip("this machine has the NPU")
    monkeypatch.setattr(runtime, "choose_layout", lambda soc, shared=None: export_layout("69"))
    notes = []
    with pytest.raises(EngineError, match="only load on a Snapdragon NPU"):
        runtime.QnnTransformer(tiny_model(), tmp_path, "Tiny", 32, prefill_length=16, decode_lengths=(1, 8),
                               block_layers=1, progress=notes.append)
    (folder,) = (tmp_path / "qnn").iterdir()
    assert folder.name.startswith("Tiny-sm8750-shared-")
    assert sorted(p.name for p in folder.glob("*.bin")) == ["block00-01_c32.bin", "block01-02_c32.bin"]
    assert len(list(folder.glob("*.ctx.onnx"))) == 6
    assert [n.split(":")[0] for n in notes] == ["compiling block 1/2 for SM8750", "compiling block 2/2 for SM8750"]
