"""Compiling C sources into one program or library, a source per compiler process.

One ``cc a.c b.c ... -o out`` compiles its sources one after another: the amx build took 66 s
that way on 2 cores at a first start (and the test suite made ten such builds). Here each source is
compiled to an object on its own, as many at a time as there are cores, and the objects linked.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Sequence

TIMEOUT_S = 240.0     # the whole build; a first start on a slow phone takes minutes, not hours


def compile_c(cc: str, flags: Sequence[str], sources: Sequence[Path], out: Path,
              libs: Sequence[str] = ("-lm",), jobs: int | None = None) -> tuple[str, bool] | None:
    """Build ``sources`` with ``flags`` into ``out`` (written whole: a temporary file renamed).
    None, or (why not, whether it lasts: the compiler ran and refused the sources, as it will
    again, where a compiler that cannot be run or a timeout may pass next time)."""
    jobs = max(1, min(len(sources), jobs or os.cpu_count() or 1))
    deadline = time.monotonic() + TIMEOUT_S
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        objects = [Path(tmp) / f"{i}-{src.stem}.o" for i, src in enumerate(sources)]
        # the largest sources first (the longest compiles), so that no core waits on one at the end
        waiting = sorted(zip(sources, objects), key=lambda so: -so[0].stat().st_size)
        running: list[tuple[subprocess.Popen, Path]] = []   # each with the file its errors go to
        try:
            while waiting or running:
                while waiting and len(running) < jobs:
                    src, obj = waiting.pop(0)
                    log = obj.with_suffix(".err")
                    with open(log, "w") as err:
                        running.append((subprocess.Popen([cc, *flags, "-c", str(src), "-o", str(obj)],
                                                         stdout=subprocess.DEVNULL, stderr=err), log))
                finished = [(job, log) for job, log in running if job.poll() is not None]
                if not finished:
                    if time.monotonic() > deadline:
                        raise subprocess.TimeoutExpired(cc, TIMEOUT_S)
                    time.sleep(0.02)
                    continue
                for job, log in finished:
                    running.remove((job, log))
                    if job.returncode != 0:
                        return f"compiling the kernel failed: {_first_line(log.read_text(errors='replace'))}", True
            linked = Path(tmp) / out.name
            done = subprocess.run([cc, *flags, *map(str, objects), "-o", str(linked), *libs], capture_output=True,
                                  text=True, timeout=max(0.1, deadline - time.monotonic()), check=False)
            if done.returncode != 0:
                return f"linking the kernel failed: {_first_line(done.stderr)}", True
            os.replace(linked, out)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"compiling the kernel failed: cannot run {cc}: {exc.__class__.__name__}", False
        finally:
            for job, _ in running:
                job.kill()
                job.wait()
    return None


def _first_line(text: str) -> str:
    """The compiler's first error (gcc says "In function ..." before it), else its first line."""
    lines = text.strip().splitlines() or ["unknown error"]
    return next((line for line in lines if "error" in line), lines[0])
