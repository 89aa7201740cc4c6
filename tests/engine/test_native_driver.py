"""The native kernels' C test driver (tests/native/driver.c) on both instruction sets: built with
the x86 kernels and run natively, cross-compiled with the ARM64 kernels and run under
qemu-aarch64 (without the dot product, with it, with it and i8mm); then both builds' outputs
compared bit for bit, since the ARM64 kernels repeat x86's fp32 operations one for one. And
host_isa(), which picks the kernels for a CPU."""
from __future__ import annotations

import platform
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Callable

import pytest

import engine.runtime.kernels as kernels
from engine.runtime.kernels import (AVX512_VNNI, FLAGS, ISA_FLAGS, ISA_FOLDER, KERNELS, cpu_features, cpu_identity,
                                    host_isa, sources, wide_tiles)
from engine.runtime.kernels.compile import compile_c

DRIVER = Path(__file__).resolve().parents[1] / "native" / "driver.c"
CROSS_CC = "aarch64-linux-gnu-gcc"            # Debian's gcc-aarch64-linux-gnu
QEMU = "qemu-aarch64"                         # Debian's qemu-user
SYSROOT = Path("/usr/aarch64-linux-gnu")      # the ARM64 libc the cross compiler links against
BUILD = [f for f in FLAGS if f not in ("-shared", "-fPIC")]   # a program, not a library
# The three paths of arm64/quant_dot.c: cortex-a57, ARMv8.0 without the dot product (pairs);
# cortex-a76, the dot product without i8mm (SDOT); max, every extension (SMMLA)
ARM_CPUS = ["cortex-a57", "cortex-a76", "max"]


def build(cc: str, isa: str, out: Path) -> Path:
    failed = compile_c(cc, [*BUILD, *ISA_FLAGS[isa], "-I", str(KERNELS)], [DRIVER, *sources(isa)], out)
    assert failed is None, f"building the {isa} driver failed: {failed[0]}"
    return out


def run(cmd: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done


def qemu(cpu: str) -> list[str]:
    return [QEMU, "-L", str(SYSROOT), "-cpu", cpu]


@pytest.fixture(scope="module")
def x86_driver(tmp_path_factory) -> Path:
    isa, why = host_isa()
    if ISA_FOLDER.get(isa) != "x86":
        pytest.skip(f"the x86 driver needs an x86 CPU with AVX2/FMA/F16C: {why or f'this is {platform.machine()}'}")
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler (cc/gcc) on PATH")
    return build(cc, "avx2", tmp_path_factory.mktemp("x86") / "driver")


@pytest.fixture(scope="module", params=["amx"])   # avx-vnni, avx512-vnni: their own test, both tiles
def vnni_driver(x86_driver, tmp_path_factory, request) -> Path:
    isa = request.param
    if host_isa(isa)[0] != isa:
        pytest.skip(f"this CPU cannot run the {isa} kernels: {host_isa(isa)[1]}")
    return build(shutil.which("cc") or shutil.which("gcc"), isa, tmp_path_factory.mktemp(isa) / "driver")


@pytest.fixture(scope="module")
def arm_driver(tmp_path_factory) -> Path:
    missing = [what for what, there in ((f"{CROSS_CC} (apt-get install gcc-aarch64-linux-gnu)", shutil.which(CROSS_CC)),
                                        (f"{QEMU} (apt-get install qemu-user)", shutil.which(QEMU)),
                                        (f"the ARM64 libc in {SYSROOT}", SYSROOT.is_dir())) if not there]
    if missing:
        pytest.skip("cannot build and run the ARM64 driver: no " + ", no ".join(missing))
    return build(CROSS_CC, "neon", tmp_path_factory.mktemp("arm64") / "driver")


@pytest.fixture(scope="module")
def dumped(tmp_path_factory) -> Callable[[list[str]], tuple[str, Path]]:
    """(stdout, dump file) of ``cmd + ["dump", FILE]``, run once per command for the module:
    ``dump`` runs every check as ``check`` does and fails the same way (driver.c's main), so one
    run serves the checks and the comparisons (a qemu run is ~26 s on 2 cores; each ran twice)."""
    folder, runs = tmp_path_factory.mktemp("dumps"), {}

    def dump(cmd: list[str]) -> tuple[str, Path]:
        if tuple(cmd) not in runs:
            out = folder / f"dump-{len(runs)}.bin"
            runs[tuple(cmd)] = (run([*cmd, "dump", str(out)]).stdout, out)
        return runs[tuple(cmd)]
    return dump


def passed_every_check(stdout: str) -> None:
    assert stdout.rstrip().endswith(" 0 failures"), stdout


@pytest.mark.slow      # builds the kernels and the driver: ~20 s on 2 cores
def test_x86_kernels_pass_every_check(x86_driver, dumped):
    passed_every_check(dumped([str(x86_driver)])[0])


@pytest.mark.slow      # cross-builds, then emulates
@pytest.mark.parametrize("cpu", ARM_CPUS)
def test_arm64_kernels_pass_every_check(arm_driver, cpu, dumped):
    passed_every_check(dumped([*qemu(cpu), str(arm_driver)])[0])


def records(path: Path) -> dict[str, bytes]:
    """driver.c's dump: per output its name, NUL, a little-endian uint64 byte count, the bytes."""
    data, out, at = path.read_bytes(), {}, 0
    while at < len(data):
        end = data.index(b"\0", at)
        name = data[at:end].decode()
        (size,) = struct.unpack_from("<Q", data, end + 1)
        assert name not in out, f"the dump names two outputs {name!r}"
        out[name] = data[end + 9:end + 9 + size]
        at = end + 9 + size
    return out


def difference(name: str, arm: bytes, x86: bytes) -> str | None:
    """None if bit for bit equal, else what differs (codes are bytes, every other output fp32)."""
    if arm == x86:
        return None
    if len(arm) != len(x86):
        return f"{name}: {len(arm)} bytes against {len(x86)}"
    if name.endswith(" codes"):
        return f"{name}: {sum(p != q for p, q in zip(arm, x86))} bytes differ"
    a, b = (struct.unpack(f"<{len(x) // 4}f", x) for x in (arm, x86))
    diff = [i for i in range(len(a)) if arm[4 * i:4 * i + 4] != x86[4 * i:4 * i + 4]]
    return f"{name}: {len(diff)} of {len(a)} floats differ, first [{diff[0]}] {a[diff[0]]!r} against {b[diff[0]]!r}"


@pytest.mark.slow
def test_the_vnni_kernels_give_the_bits_of_avx2(x86_driver, vnni_driver, dumped):
    """vpdpbusd/vpdpwssd form the same integer sums as maddubs/madd, and so do AMX's tiles (the amx
    build: its batches of 32 and 33 rows ran on them, or the test says the OS refused them and
    skips): every output bit for bit."""
    stdout, vnni = dumped([str(vnni_driver)])
    passed_every_check(stdout)
    tiles_refused = vnni_driver.parent.name.startswith("amx") and "amx tiles: on" not in stdout
    a, b = records(dumped([str(x86_driver)])[1]), records(vnni)
    assert list(a) == list(b)
    found = [d for name in a if (d := difference(name, b[name], a[name]))]
    assert not found, "\n".join(found)
    if tiles_refused:   # the VNNI tiles gave those bits: say so rather than pass as if the tiles had
        pytest.skip("the OS did not grant the AMX tile state (arch_prctl): the amx build ran its VNNI tiles")


@pytest.mark.slow
@pytest.mark.parametrize("isa", ["avx-vnni", "avx512-vnni"])
def test_the_512_bit_tiles_and_the_256_bit_ones_give_the_bits_of_avx2(x86_driver, tmp_path_factory, dumped, isa):
    """The VNNI builds run their calls of 6 rows or more on 512-bit tiles where the engine turns
    them on and the CPU has AVX-512 VNNI (x86/wide.c), else on 256-bit ones: both, every output bit
    for bit as avx2's."""
    if host_isa(isa)[0] != isa:
        pytest.skip(f"this CPU cannot run the {isa} kernels: {host_isa(isa)[1]}")
    driver = build(shutil.which("cc") or shutil.which("gcc"), isa, tmp_path_factory.mktemp(isa) / "driver")
    avx2 = records(dumped([str(x86_driver)])[1])
    wide = all(f in cpu_features() for f in AVX512_VNNI)
    for cmd, says in (([str(driver)], f"512-bit tiles: {'on' if wide else 'off'}"),
                      ([str(driver), "--narrow"], "512-bit tiles: off")):
        stdout, dump = dumped(cmd)
        passed_every_check(stdout)
        assert says in stdout, stdout
        tiles = records(dump)
        assert list(tiles) == list(avx2)
        found = [d for name in avx2 if (d := difference(name, tiles[name], avx2[name]))]
        assert not found, f"{' '.join(cmd[1:]) or 'wide'}: " + "\n".join(found)


@pytest.mark.slow
@pytest.mark.parametrize("cpu", ARM_CPUS)
def test_arm64_gives_the_bits_of_x86(x86_driver, arm_driver, cpu, dumped):
    """Every output of the driver's calls, ARM64 (emulated) against x86, bit for bit: the same
    tokens on a Snapdragon as on a PC."""
    x86 = records(dumped([str(x86_driver)])[1])
    arm = records(dumped([*qemu(cpu), str(arm_driver)])[1])
    assert list(arm) == list(x86), "the two drivers wrote different outputs"
    found = [d for name in x86 if (d := difference(name, arm[name], x86[name]))]
    assert not found, f"{len(found)} of {len(x86)} outputs differ between ARM64 and x86:\n" + "\n".join(found)


# ---- host_isa(): which kernels a CPU gets ---------------------------------------------------

ARM64_CPUINFO = """processor\t: 0
BogoMIPS\t: 38.40
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp
CPU implementer\t: 0x51
CPU architecture: 8
CPU variant\t: 0xd
CPU part\t: 0x805
CPU revision\t: 14
"""
X86_CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Core(TM) i7-3770 CPU @ 3.40GHz
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep sse sse2 ssse3 sse4_1 sse4_2 popcnt avx {extra}
"""


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """machine(name, system, cpuinfo): the platform host_isa() sees; cpuinfo None = unreadable."""
    def set_machine(name: str, system: str = "Linux", cpuinfo: str | None = None) -> None:
        fake = tmp_path / "cpuinfo"
        if cpuinfo is not None:
            fake.write_text(cpuinfo)
        monkeypatch.setattr(platform, "machine", lambda: name)
        monkeypatch.setattr(platform, "system", lambda: system)
        monkeypatch.setattr(kernels, "Path", lambda p: fake if str(p) == "/proc/cpuinfo" else Path(p))
    return set_machine


def test_arm64_linux_gets_the_neon_kernels(machine):
    machine("aarch64", cpuinfo=ARM64_CPUINFO)
    assert {"asimd", "asimddp", "fp"} <= cpu_features()      # the "Features" line
    assert host_isa() == ("neon", None)


def test_x86_with_avx2_gets_the_avx2_kernels(machine):
    machine("x86_64", cpuinfo=X86_CPUINFO.format(extra="fma f16c avx2"))
    assert {"avx2", "fma", "f16c"} <= cpu_features()
    assert host_isa() == ("avx2", None)


def test_x86_with_avx_vnni_gets_the_vnni_kernels_unless_told_not_to(machine, monkeypatch):
    machine("x86_64", cpuinfo=X86_CPUINFO.format(extra="fma f16c avx2 avx_vnni"))
    monkeypatch.setenv("HEXA_ISA", "avx2")       # the settings' variable: the engine never reads it
    assert host_isa() == host_isa("auto") == ("avx-vnni", None)
    assert host_isa("avx2") == ("avx2", None)    # the engine option isa = "avx2"


def test_x86_with_avx512_vnni_gets_its_build_and_a_named_build_it_lacks_is_refused(machine):
    machine("x86_64", cpuinfo=X86_CPUINFO.format(extra="fma f16c avx2 avx512f avx512bw avx512vl avx512_vnni"))
    assert host_isa() == ("avx512-vnni", None)
    assert host_isa("avx2") == ("avx2", None)
    isa, why = host_isa("avx-vnni")
    assert isa is None and "AVX VNNI" in why
    isa, why = host_isa("neon")
    assert isa is None and "x86-64" in why
    machine("x86_64", cpuinfo=X86_CPUINFO.format(extra="fma f16c avx2 avx512f avx512_vnni"))   # no VL: no EVEX ymm
    assert host_isa() == ("avx2", None)


def test_amd_zen4_and_zen5_get_512_bit_tiles_and_intel_and_zen3_do_not(machine):
    """AMD with AVX-512 VNNI (Zen 4: family 25; Zen 5: 26) runs the VNNI builds' many-row products
    on 512-bit tiles; Intel, a CPU without AVX-512 VNNI (Zen 3, also family 25) and AMD before
    family 25 keep the 256-bit ones."""
    flags = "fma f16c avx2 avx_vnni avx512f avx512bw avx512vl avx512_vnni"
    amd = X86_CPUINFO.replace("GenuineIntel", "AuthenticAMD").format(extra=flags)
    machine("x86_64", cpuinfo=amd.replace("model name", "cpu family\t: 26\nmodel name"))
    assert host_isa() == ("avx-vnni", None)
    assert cpu_identity() == ("AuthenticAMD", 26)
    assert wide_tiles("avx-vnni") and wide_tiles("avx512-vnni") and not wide_tiles("avx2")
    machine("x86_64", cpuinfo=amd.replace("model name", "cpu family\t: 26\nmodel name").replace(" avx512_vnni", ""))
    assert not wide_tiles("avx-vnni")
    zen4 = amd.replace(" avx_vnni", "").replace("model name", "cpu family\t: 25\nmodel name")   # AVX-512 VNNI only
    machine("x86_64", cpuinfo=zen4)
    assert host_isa() == ("avx512-vnni", None) and wide_tiles("avx512-vnni")
    machine("x86_64", cpuinfo=zen4.replace(" avx512f avx512bw avx512vl avx512_vnni", ""))   # Zen 3
    assert host_isa() == ("avx2", None) and not wide_tiles("avx2") and not wide_tiles("avx512-vnni")
    assert not wide_tiles("avx512-vnni", ("AuthenticAMD", 23))
    assert not wide_tiles("avx512-vnni", ("GenuineIntel", 6))
    machine("x86_64", cpuinfo=X86_CPUINFO.format(extra=flags))   # Intel, no family line
    assert cpu_identity() == ("GenuineIntel", 0) and not wide_tiles("avx512-vnni")


def test_x86_with_amx_gets_the_amx_build_and_without_it_cannot_name_it(machine):
    sapphire = "fma f16c avx2 avx_vnni avx512f avx512bw avx512vl avx512_vnni avx512_bf16 amx_tile amx_int8 amx_bf16"
    machine("x86_64", cpuinfo=X86_CPUINFO.format(extra=sapphire))
    assert host_isa() == ("amx", None)
    assert host_isa("avx-vnni") == ("avx-vnni", None)     # the builds without tiles stay selectable
    machine("x86_64", cpuinfo=X86_CPUINFO.format(extra=sapphire.replace(" amx_int8", "")))
    assert host_isa() == ("avx-vnni", None)
    # the bf16 prompt rows convert with AVX512-BF16's instructions (x86/amx_bf16.h)
    machine("x86_64", cpuinfo=X86_CPUINFO.format(extra=sapphire.replace(" avx512_bf16", "")))
    assert host_isa() == ("avx-vnni", None)
    isa, why = host_isa("amx")
    assert isa is None and "AMX" in why


def test_x86_without_avx2_says_what_it_lacks(machine):
    machine("x86_64", cpuinfo=X86_CPUINFO.format(extra="f16c"))
    isa, why = host_isa()
    assert isa is None and "avx2" in why and "fma" in why and "f16c" not in why


def test_x86_with_unreadable_cpuinfo_says_so(machine):
    machine("AMD64", system="Windows")
    assert cpu_features() == set()
    isa, why = host_isa()
    assert isa is None and "/proc/cpuinfo" in why


def test_windows_on_arm_keeps_the_reference_layers_with_its_reason(machine):
    machine("ARM64", system="Windows")
    isa, why = host_isa()
    assert isa is None and "Windows" in why


def test_32_bit_arm_python_needs_a_64_bit_one(machine):
    machine("armv8l", cpuinfo=ARM64_CPUINFO)
    isa, why = host_isa()
    assert isa is None and "64-bit" in why


def test_unknown_machine_is_named_in_the_reason(machine):
    machine("riscv64", cpuinfo="processor\t: 0\nisa\t\t: rv64imafdc\n")
    assert host_isa() == (None, "no native kernels for riscv64")
