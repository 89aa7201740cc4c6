"""The house rules, checked from the source: no import cycles (imports inside functions count
too: a lazy import hides a cycle from Python, not from a reader), data flows one way
(app -> agents -> memory, engine), and no module grows past 400 lines."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "agents", "memory", "engine", "assets")
MAX_LINES = 400
# what each package may import from the others (the arrow of the design: app -> agents -> memory, engine)
ALLOWED = {"app": {"agents", "memory", "engine", "assets"}, "agents": {"memory", "engine", "assets"},
           "memory": set(), "engine": set(), "assets": set()}


def modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports (resolved to the longest known module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join(parts[:keep] + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_no_import_cycles():
    g = graph()
    # a package's __init__ re-exporting its modules is not a cycle of design: drop parent edges
    edges = {m: {t for t in ts if not m.startswith(t + ".")} for m, ts in g.items()}
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(edges.get(m, ())):
            if state.get(t) == 1:
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_data_flows_one_way():
    bad = sorted(f"{m} imports {t}" for m, ts in graph().items() for t in ts
                 if t.split(".")[0] != m.split(".")[0] and t.split(".")[0] not in ALLOWED[m.split(".")[0]])
    assert not bad, "\n".join(bad)


def test_no_module_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in modules().values()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, long


def test_the_checks_can_fail(tmp_path):
    """The cycle finder sees a cycle through a function-level import."""
    known = {"a": tmp_path / "a.py", "b": tmp_path / "b.py"}
    known["a"].write_text("import b\n")
    known["b"].write_text("def f():\n    from a import x\n")
    assert imports_of("a", known["a"], known) == {"b"} and imports_of("b", known["b"], known) == {"a"}


def test_the_ui_agent_is_a_pure_adb_client():
    """agents.ui talks to a phone over adb only: it never imports the virtual phone or the
    benchmark's harness (whose state checks would be an oracle no real phone has)."""
    bad = sorted(f"{m} imports {t}" for m, ts in graph().items() if m.startswith("agents.ui")
                 for t in ts if t.startswith(("agents.phone", "agents.harness")))
    assert not bad, "\n".join(bad)
