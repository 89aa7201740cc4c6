"""Reading documents into plain text: .txt .md .pdf .docx .html and source files.

``extract(path, max_mib)`` returns ``Extracted(text, kind, sha256)`` or raises ``DocumentError``
with a one-line reason that names the file once: missing/unreadable file, a folder, over the size
limit (in MiB), empty, binary or unknown format, encrypted or image-only PDF, damaged .docx/.pdf.
Plain text is decoded as UTF-8, cp1252 or charset_normalizer's guess (``decode_text``).
"""
from __future__ import annotations

import hashlib
import html.parser
import io
import re
import stat
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
MIB = 1024 * 1024  # size limits are set and shown in MiB


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


def extract(path: Path, max_mib: float | None = None) -> Extracted:
    """The text of the file at ``path``, at most ``max_mib`` MiB; ``DocumentError`` if refused."""
    path = Path(path)
    name = path.name or str(path)  # every reason starts with it, once
    try:
        info = path.stat()
    except FileNotFoundError:
        raise DocumentError(f"{name}: no such file") from None
    except OSError as e:
        raise DocumentError(f"{name}: cannot read ({_reason(e)})") from None
    if stat.S_ISDIR(info.st_mode):
        raise DocumentError(f"{name}: is a folder, not a file")
    kind = kind_of(path)
    if kind is None:
        ext = path.suffix or "(none)"
        raise DocumentError(f"{name}: unsupported file type {ext} "
                            f"(supported: txt, md, pdf, docx, html and source files)")
    if max_mib is not None and info.st_size > max_mib * MIB:
        raise DocumentError(f"{name}: too large ({_mib(info.st_size / MIB)} MiB; limit "
                            f"{max_mib:g} MiB)")
    if info.st_size == 0:
        raise DocumentError(f"{name}: empty file")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise DocumentError(f"{name}: cannot read ({_reason(e)})") from None
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


def _reason(e: OSError) -> str:
    return e.strerror or type(e).__name__  # str(e) would name the file a second time


def _mib(n: float) -> str:
    return f"{n:.1f}" if n >= 0.1 else f"{n:.2g}"


# -- plain text ---------------------------------------------------------------------------------
_BOMS = (("utf-8-sig", b"\xef\xbb\xbf"), ("utf-32", b"\xff\xfe\x00\x00"),
         ("utf-32", b"\x00\x00\xfe\xff"), ("utf-16", b"\xff\xfe"), ("utf-16", b"\xfe\xff"))
# signs that may stand between two letters of a word: apostrophe (l’homme), middle dot (l·l)
_INSIDE_WORDS = "\u2019\u00b7"
_LETTERS = re.compile(r"[^\W\d_]+")
_SIGN_IN_WORD = re.compile(r"(?<=[^\W\d_])[^\x00-\x7f](?=[^\W\d_])")


def decode_text(data: bytes, name: str = "file") -> str:
    """Decode bytes as text, detecting the encoding; refuse binary content.

    Mostly valid UTF-8 is UTF-8 (its few bad bytes become U+FFFD); what reads as Western European
    text in cp1252 (Latin-1's superset) is cp1252; anything else is charset_normalizer's guess."""
    for enc, bom in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(enc)
            except UnicodeDecodeError:
                break
    if _looks_binary(data):
        raise DocumentError(f"{name}: binary content, not a text document")
    text = _as_utf8(data)
    if text is None:
        text = _as_western(data)
    if text is not None:
        return text
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None:
        raise DocumentError(f"{name}: cannot detect the text encoding (binary file?)")
    return str(best)


def _as_utf8(data: bytes) -> str | None:
    """The UTF-8 text, when its valid multi-byte characters are at least as many as its bad
    bytes: text in a single-byte encoding almost never forms valid UTF-8 sequences."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") - data.count("\ufffd".encode())
    good = sum(1 for ch in text if ord(ch) > 0x7F) - text.count("\ufffd")
    return text if good >= bad else None


def _as_western(data: bytes) -> str | None:
    """The cp1252 text, when it reads as a Western European language: its words with non-ASCII
    letters also have ASCII ones (another alphabet read as cp1252 gives whole words of accented
    letters: "Ïðèâåò"), and no sign stands inside a word (Polish in cp1250 gives "Za¿ó³æ")."""
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:  # bytes cp1252 leaves undefined: another encoding
        return None
    accented = [w for w in _LETTERS.findall(text) if not w.isascii()]
    foreign = sum(1 for w in accented if len(w) >= 3 and not any(c.isascii() for c in w))
    signs = sum(1 for c in _SIGN_IN_WORD.findall(text)
                if not c.isalpha() and c not in _INSIDE_WORDS)
    return text if (foreign + signs) * 10 <= len(accented) else None


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
