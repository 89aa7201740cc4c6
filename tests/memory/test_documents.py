"""Document round trips and refusals on a real store."""
from __future__ import annotations

import pytest

from memory import DocumentError, Memory
from memory.documents import extract

TOPICS = [
    "Volcanoes erupt when magma rises through cracks in the crust of the earth.",
    "The recipe calls for two cups of flour, one egg and a pinch of salt.",
    "Quarterly revenue grew by twelve percent thanks to strong cloud sales.",
]


def test_txt_md_source_html_round_trip(mem, tmp_path):
    files = {
        "notes.txt": "Plain text notes.\n" + TOPICS[0],
        "readme.md": "# Title\n\nSome *markdown* here. " + TOPICS[1],
        "tool.py": "def add(a, b):\n    '''Add two numbers.'''\n    return a + b\n",
        "page.html": "<html><head><title>My Page</title><style>p{color:red}</style>"
                     "<script>var x = 1;</script></head><body><h1>Header</h1>"
                     f"<p>{TOPICS[2]}</p><ul><li>one</li><li>two &amp; three</li></ul></body></html>",
    }
    for name, content in files.items():
        (tmp_path / name).write_text(content, encoding="utf-8")
    seen = []
    docs = [mem.add_document(tmp_path / n, progress=lambda d, t: seen.append((d, t)))
            for n in files]
    assert [d.name for d in docs] == list(files)
    assert all(d.chunks >= 1 for d in docs)
    assert seen and seen[-1][0] == seen[-1][1]
    assert mem.document_text(docs[0].id) == files["notes.txt"].rstrip("\n")
    assert "*markdown*" in mem.document_text(docs[1].id)
    assert "return a + b" in mem.document_text(docs[2].id)
    html = mem.document_text(docs[3].id)
    assert "My Page" in html and TOPICS[2] in html and "two & three" in html
    assert "color:red" not in html and "var x" not in html
    assert [d.id for d in mem.list_documents()] == [d.id for d in docs]


def test_pdf_round_trip(mem, tmp_path, make_pdf):
    pdf = make_pdf(tmp_path / "report.pdf", [["Page one says hello."], ["Page two: " + TOPICS[0]]])
    doc = mem.add_document(pdf)
    text = mem.document_text(doc.id)
    assert "Page one says hello." in text and "magma rises" in text
    assert doc.name == "report.pdf" and doc.chunks >= 1


def test_docx_round_trip(mem, tmp_path, make_docx):
    p = make_docx(tmp_path / "memo.docx", ["Memo heading", TOPICS[1]],
                  table=[["Name", "Score"], ["Ada", "42"]])
    doc = mem.add_document(p)
    text = mem.document_text(doc.id)
    assert "Memo heading" in text and "pinch of salt" in text
    assert "Ada | 42" in text


def test_encoding_detection(mem, tmp_path):
    fr = ("Le café est très bon à Paris. Les élèves étudient la géographie et "
          "l'histoire de la région. Où est la bibliothèque ? Ça dépend. ") * 5
    p1 = tmp_path / "latin.txt"
    p1.write_bytes(fr.encode("cp1252"))
    p2 = tmp_path / "wide.txt"
    p2.write_bytes(fr.encode("utf-16"))  # with BOM
    d1, d2 = mem.add_document(p1), mem.add_document(p2)
    assert "café" in mem.document_text(d1.id) and "bibliothèque" in mem.document_text(d1.id)
    assert mem.document_text(d2.id).strip() == fr.strip()


def test_dedup_by_content_hash(mem, tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "copy_of_a.txt"
    a.write_text(TOPICS[0] * 3)
    b.write_text(TOPICS[0] * 3)
    d1 = mem.add_document(a)
    d2 = mem.add_document(b)
    assert d1.id == d2.id and d1.sha256 == d2.sha256
    assert len(mem.list_documents()) == 1


@pytest.mark.parametrize("name,content,reason", [
    ("blob.bin", b"\x00\x01\x02", "unsupported file type"),
    ("image.png", b"\x89PNG\r\n\x1a\n\x00\x00", "unsupported file type"),
    ("fake.txt", b"abc\x00\x00\x01\x02def" * 10, "binary"),
    ("empty.txt", b"", "empty"),
    ("blank.md", b"   \n\n  \t\n", "no text"),
])
def test_refusals(mem, tmp_path, name, content, reason):
    p = tmp_path / name
    p.write_bytes(content)
    with pytest.raises(DocumentError) as ei:
        mem.add_document(p)
    msg = str(ei.value)
    assert reason in msg and name in msg and "\n" not in msg
    assert mem.list_documents() == []


def test_refuse_missing_and_too_large(tmp_path):
    with Memory.open(tmp_path / "d", max_file_mb=0.001) as mem:
        with pytest.raises(DocumentError, match="no such file"):
            mem.add_document(tmp_path / "nope.txt")
        big = tmp_path / "big.txt"
        big.write_text("x " * 2000)
        with pytest.raises(DocumentError, match="too large"):
            mem.add_document(big)


def test_refuse_image_only_and_encrypted_pdf(mem, tmp_path, make_pdf):
    from pypdf import PdfReader, PdfWriter

    blank = PdfWriter()
    blank.add_blank_page(width=200, height=200)
    with open(tmp_path / "scan.pdf", "wb") as f:
        blank.write(f)
    with pytest.raises(DocumentError, match="no extractable text"):
        mem.add_document(tmp_path / "scan.pdf")

    src = make_pdf(tmp_path / "plain.pdf", [["Top secret text."]])
    w = PdfWriter()
    for page in PdfReader(src).pages:
        w.add_page(page)
    w.encrypt(user_password="hunter2", owner_password="owner", algorithm="RC4-128")
    with open(tmp_path / "locked.pdf", "wb") as f:
        w.write(f)
    with pytest.raises(DocumentError, match="encrypted"):
        mem.add_document(tmp_path / "locked.pdf")

    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf")
    with pytest.raises(DocumentError):
        mem.add_document(tmp_path / "broken.pdf")
    (tmp_path / "broken.docx").write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(DocumentError, match="docx"):
        mem.add_document(tmp_path / "broken.docx")
    assert mem.list_documents() == []


def test_extract_is_pure(tmp_path):
    p = tmp_path / "Makefile"
    p.write_text("all:\n\techo hi\n")
    ex = extract(p)
    assert ex.kind == "text" and "echo hi" in ex.text and len(ex.sha256) == 64
