"""The docs stay true to the tree: every package docs/architecture.md names exists, README stays a
short page for users, and every docs/ page it links to is there."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = re.compile(r"`([a-z_]+(?:/[a-z_]+)*)/`")


def _dirs() -> set[str]:
    """Every folder of the source tree, as its path from the root and every shorter tail of it."""
    out = set()
    for top in ("app", "agents", "engine", "memory", "assets", "tests"):
        for d in [ROOT / top, *(p for p in (ROOT / top).rglob("*") if p.is_dir())]:
            parts = d.relative_to(ROOT).parts
            out.update("/".join(parts[i:]) for i in range(len(parts)))
    return out


def test_every_package_the_architecture_page_names_exists():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(PACKAGE.findall(text))
    assert {"engine", "memory", "agents", "app", "agents/ui", "agents/phone"} <= named
    missing = sorted(n for n in named if n not in _dirs())
    assert not missing, f"docs/architecture.md names folders that do not exist: {missing}"


def test_readme_is_short_and_its_doc_links_resolve():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    links = re.findall(r"\]\((docs/[^)#]+)", text)
    assert links, "README links to no docs/ page"
    assert all((ROOT / link).is_file() for link in links), links
    assert "DESIGN.md" not in text
