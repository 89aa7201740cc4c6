"""Reading documents into plain text: .txt .md .pdf .docx .html and source files.

``extract(path, max_bytes)`` returns ``Extracted(text, kind, sha256)`` or raises ``DocumentError``
with a one-line reason: missing/unreadable file, over the size limit, empty, binary or unknown
format, encrypted or image-only PDF, damaged .docx/.pdf.
"""
from __future__ import annotations

import hashlib
import html.parser
import io
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import DocumentError

PLAIN = {".txt", ".text", ".md", ".markdown", ".rst", ".log", ".csv", ".tsv"}
HTML = {".html", ".htm", ".xhtml"}
SOURCE = {
    ".py", ".pyi", ".ipynb", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".java", ".kt",
    ".kts", ".scala", ".go", ".rs", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".rb", ".php",
    ".swift", ".m", ".mm", ".cs", ".fs", ".lua", ".pl", ".pm", ".r", ".jl", ".dart", ".zig",
    ".sh", ".bash", ".zsh", ".fish", ".ps1", ".bat", ".sql", ".css", ".scss", ".less", ".vue",
    ".svelte", ".json", ".jsonl", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".xml",
    ".proto", ".gradle", ".cmake", ".mk", ".tex", ".el", ".clj", ".ex", ".exs", ".erl", ".hs",
    ".ml", ".nim", ".v", ".sv", ".vhd", ".asm", ".s", ".tcss", ".env", ".properties",
}
TEXT_NAMES = {"makefile", "dockerfile", "readme", "license", "copying", "authors", "changelog",
              "gemfile", "rakefile", "procfile", "vagrantfile", "justfile", "cmakelists.txt"}
SUPPORTED = PLAIN | HTML | SOURCE | {".pdf", ".docx"}


@dataclass(frozen=True)
class Extracted:
    text: str
    kind: str       # "text" | "markdown" | "source" | "html" | "pdf" | "docx"
    sha256: str


def kind_of(path: Path) -> str | None:
    ext = path.suffix.lower()
    if ext == ".pdf":
        return "pdf"
    if ext == ".docx":
        return "docx"
    if ext in HTML:
        return "html"
    if ext in {".md", ".markdown"}:
        return "markdown"
    if ext in PLAIN:
        return "text"
    if ext in SOURCE:
        return "source"
    if path.name.lower() in TEXT_NAMES or (ext == "" and not path.name.startswith(".")):
        return "text?"  # no extension: accepted only if the bytes are clearly text
    return None


def extract(path: Path, max_bytes: int | None = None) -> Extracted:
    path = Path(path)
    name = path.name
    if not path.exists():
        raise DocumentError(f"{name}: no such file")
    if path.is_dir():
        raise DocumentError(f"{name}: is a folder, not a file")
    kind = kind_of(path)
    if kind is None:
        ext = path.suffix or "(none)"
        raise DocumentError(f"{name}: unsupported file type {ext} "
                            f"(supported: txt, md, pdf, docx, html and source files)")
    try:
        size = path.stat().st_size
        if max_bytes is not None and size > max_bytes:
            raise DocumentError(f"{name}: too large ({size / 1e6:.1f} MB; limit "
                                f"{max_bytes / 1e6:.1f} MB)")
        if size == 0:
            raise DocumentError(f"{name}: empty file")
        data = path.read_bytes()
    except OSError as e:
        raise DocumentError(f"{name}: cannot read ({e.strerror or e})") from None
    digest = hashlib.sha256(data).hexdigest()

    if kind == "pdf":
        text = _pdf_text(data, name)
    elif kind == "docx":
        text = _docx_text(data, name)
    else:
        text = decode_text(data, name)
        if kind == "html":
            text = html_to_text(text)
        elif kind == "text?":
            kind = "text"
    text = _tidy(text)
    if not text.strip():
        if kind == "pdf":
            raise DocumentError(f"{name}: PDF has no extractable text (scanned or image-only?)")
        raise DocumentError(f"{name}: no text content (empty document)")
    return Extracted(text, kind, digest)


# -- plain text ---------------------------------------------------------------------------------
_BOMS = (("utf-8-sig", b"\xef\xbb\xbf"), ("utf-32", b"\xff\xfe\x00\x00"),
         ("utf-32", b"\x00\x00\xfe\xff"), ("utf-16", b"\xff\xfe"), ("utf-16", b"\xfe\xff"))


def decode_text(data: bytes, name: str = "file") -> str:
    """Decode bytes as text, detecting the encoding; refuse binary content."""
    for enc, bom in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(enc)
            except UnicodeDecodeError:
                break
    if _looks_binary(data):
        raise DocumentError(f"{name}: binary content, not a text document")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None:
        raise DocumentError(f"{name}: cannot detect the text encoding (binary file?)")
    return str(best)


def _looks_binary(data: bytes) -> bool:
    head = data[:65536]
    if b"\x00" in head:
        return True
    # control characters other than tab/newline/cr/formfeed/escape in more than 2% of the bytes
    ctrl = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27))
    return ctrl > 0.02 * max(1, len(head))


def _tidy(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = re.sub(r"[ \t\f\v]+\n", "\n", text)
    text = re.sub(r"\n{4,}", "\n\n\n", text)
    return text.strip("\n")


# -- html ---------------------------------------------------------------------------------------
class _HTMLText(html.parser.HTMLParser):
    SKIP = {"script", "style", "noscript", "template", "svg", "head"}
    BLOCK = {"p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header",
             "footer", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "hr", "title",
             "dt", "dd", "figcaption", "main", "nav", "aside"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        if tag == "title":
            self._in_title = True
        if tag in self.BLOCK:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("- ")

    def handle_endtag(self, tag):
        if tag in self.SKIP and self.skip:
            self.skip -= 1
        if tag == "title":
            self._in_title = False
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if not self.skip:
            self.parts.append(data)


def html_to_text(source: str) -> str:
    p = _HTMLText()
    p.feed(source)
    p.close()
    text = "".join(p.parts)
    text = re.sub(r"[ \t]+", " ", text)
    text = re.sub(r" *\n *", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    title = " ".join(p.title.split())
    if title and not text.startswith(title):
        text = f"{title}\n\n{text}"
    return text


# -- pdf ----------------------------------------------------------------------------------------
def _pdf_text(data: bytes, name: str) -> str:
    import logging

    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # pypdf warns loudly on odd files
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                ok = reader.decrypt("")
            except Exception:  # missing crypto backend, unknown algorithm
                ok = 0
            if not ok:
                raise DocumentError(f"{name}: PDF is encrypted (password protected)")
        pages = []
        for page in reader.pages:
            try:
                pages.append(page.extract_text() or "")
            except Exception:  # one bad page should not lose the rest
                pages.append("")
    except DocumentError:
        raise
    except (PdfReadError, Exception) as e:  # pypdf raises many types on damaged files
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise DocumentError(f"{name}: damaged or unreadable PDF ({msg})") from None
    return "\n\n".join(p.strip("\n") for p in pages)


# -- docx ---------------------------------------------------------------------------------------
def _docx_text(data: bytes, name: str) -> str:
    try:
        import docx  # python-docx
        from docx.table import Table
        from docx.text.paragraph import Paragraph
    except ImportError:  # pragma: no cover - dependency declared in pyproject
        raise DocumentError(f"{name}: .docx support needs python-docx") from None
    try:
        d = docx.Document(io.BytesIO(data))
    except Exception as e:
        raise DocumentError(f"{name}: damaged or unreadable .docx ({type(e).__name__})") from None
    out: list[str] = []
    body = d.element.body
    for child in body.iterchildren():
        tag = child.tag.rsplit("}", 1)[-1]
        if tag == "p":
            out.append(Paragraph(child, d).text)
        elif tag == "tbl":
            for row in Table(child, d).rows:
                cells, seen = [], set()
                for cell in row.cells:  # merged cells repeat; keep each once
                    if id(cell._tc) not in seen:
                        seen.add(id(cell._tc))
                        cells.append(cell.text.strip())
                out.append(" | ".join(cells))
    return "\n".join(out)
