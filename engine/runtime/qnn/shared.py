"""Which Snapdragon the QNN graphs are compiled for, and how their context binaries are laid out.

A block of layers is compiled once per static length S. Written separately, every S graph carries
its own copy of the block's weights (the memory problem progressive switching works around).
onnxruntime-qnn can instead write the S graphs of a block into ONE context binary whose graphs
share one copy of the weights (``ep.share_ep_contexts``): QNN deduplicates identical weight data
across the graphs compiled into one context. Qualcomm's emulator on x86-64 cannot load such a
binary (it segfaults), so:

- hexa on a Snapdragon (ARM64: the HTP library is the NPU): one weight-shared binary per block;
- hexa on x86-64 (the emulator): separate binaries, also when ``--soc`` names a real device; the
  shared ones for that device are an export (``write_shared_binaries``, ``hexa npu build``).

The qnn.shared option (``HEXA_QNN_SHARED``) false forces separate binaries on a device; true on
x86-64 is refused.
"""
from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from pathlib import Path

from ...errors import EngineError


@dataclass(frozen=True)
class Soc:
    id: str        # QNN's ``soc_model``
    chip: str      # Qualcomm's part number, as QNN names it
    arch: str      # its Hexagon architecture (``htp_arch``)
    name: str      # the product name ("" where not established)


# Checked against onnxruntime-qnn 2.7.0 (QNN 2.51) here: the provider's own id <-> part-number
# table (soc::SocModelFromName), and a graph compiled for each id, whose context binary records
# "soc_type=<part>;arch=<v>". Ids of that table whose fp16 graphs QNN refuses to compile (34, 68,
# 70) and SM8475 (QNN records arch 68, against Qualcomm's v69) are left out.
SOCS = (
    Soc("30", "SM8350", "68", "Snapdragon 888"),
    Soc("36", "SM8450", "69", "Snapdragon 8 Gen 1"),
    Soc("43", "SM8550", "73", "Snapdragon 8 Gen 2"),
    Soc("57", "SM8650", "75", "Snapdragon 8 Gen 3"),
    Soc("60", "SC8380XP", "73", "Snapdragon X Elite"),
    Soc("69", "SM8750", "79", "Snapdragon 8 Elite"),
    Soc("87", "SM8850", "81", "Snapdragon 8 Elite Gen 5"),
    Soc("88", "SC8480XP", "81", ""),
    Soc("103", "SM8975", "85", ""),
)
DEFAULT_SOC = "57"        # what the emulator compiles for unless told otherwise (the soc setting)


def soc_list() -> str:
    return ", ".join(f"{s.id} {s.chip}" + (f" ({s.name})" if s.name else "") for s in SOCS)


def resolve_soc(value: str | None, origin: str = "--soc") -> Soc:
    """A QNN SoC id ("57") or part number ("SM8650"); None: the default."""
    if value is None:
        value = DEFAULT_SOC
    key = str(value).strip().upper()
    for s in SOCS:
        if key in (s.id, s.chip):
            return s
    raise EngineError(f"{origin} {value!r} is not a Snapdragon hexa knows; use a QNN SoC id or part "
                      f"number: {soc_list()}")


def real_npu(machine: str | None = None) -> bool:
    """On ARM64 the onnxruntime-qnn wheel's HTP library drives the NPU; on x86-64 it is the emulator."""
    return (machine or platform.machine()).lower() in ("arm64", "aarch64")


def detect_soc(texts: list[str] | None = None) -> Soc | None:
    """The Snapdragon hexa runs on, from what the OS says (Linux: /sys/devices/soc0/machine;
    Windows: the processor name, e.g. "Snapdragon(R) X Elite - X1E78100 - Qualcomm(R) Oryon(TM)
    CPU"); None when it does not say."""
    if texts is None:
        texts = []
        try:
            texts.append(Path("/sys/devices/soc0/machine").read_text())
        except OSError:
            pass
        if os.name == "nt":
            try:
                import winreg

                with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE,
                                    r"HARDWARE\DESCRIPTION\System\CentralProcessor\0") as k:
                    texts.append(str(winreg.QueryValueEx(k, "ProcessorNameString")[0]))
            except OSError:
                pass
    for text in texts:
        t = text.upper()
        for s in SOCS:
            if re.search(rf"\b{s.chip}\b", t):
                return s
        if re.search(r"\bX ELITE\b|\bX1E", t):      # X Elite laptops name the SKU, not SC8380XP
            return resolve_soc("60")
    return None


@dataclass(frozen=True)
class Layout:
    soc: Soc
    shared: bool          # one weight-shared context binary per block (else one binary per graph)
    note: str = ""        # one line for the user when the engine does other than asked

    @property
    def word(self) -> str:
        return "shared" if self.shared else "separate"


def choose_layout(soc: str | None, machine: str | None = None, detected: Soc | None = None,
                  shared: bool | None = None) -> Layout:
    """What the engine compiles and runs here: ``soc`` is the soc setting (None: not given);
    ``shared`` the qnn.shared option (None: weight-shared binaries exactly on a Snapdragon)."""
    if real_npu(machine):
        note = ""
        if soc is not None:
            target = resolve_soc(soc)
        else:
            target = detected or detect_soc()
            if target is None:
                target = resolve_soc(None)
                note = (f"could not tell which Snapdragon this is; compiling for {target.chip} "
                        f"(pass --soc: {soc_list()})")
        return Layout(target, shared is not False, note)
    if shared:
        raise EngineError("weight-shared QNN context binaries only load on a Snapdragon NPU, not on the "
                          "x86-64 emulator; build them for a device with `hexa npu build --soc N`")
    target = resolve_soc(soc)
    note = ""
    if soc is not None and target.id != DEFAULT_SOC:
        note = (f"--soc {target.id}: the emulator here runs separate {target.chip} graphs; weight-shared "
                f"binaries for the device are built by `hexa npu build --soc {target.id}`")
    return Layout(target, False, note)


def export_layout(soc: str) -> Layout:
    """``hexa npu build --soc N``: weight-shared binaries for that device, whatever runs hexa."""
    return Layout(resolve_soc(soc), True)
