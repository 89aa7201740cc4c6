"""Document round trips and refusals on a real store."""
from __future__ import annotations

import pytest

from memory import DocumentError, Memory, StoreError
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
    assert [d.chunks for d in docs] == [len(mem.document_chunks(d.id)) for d in docs] == [1] * 4
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
    assert doc.name == "report.pdf" and doc.chunks == 1


def test_docx_round_trip(mem, tmp_path, make_docx):
    p = make_docx(tmp_path / "memo.docx", ["Memo heading", TOPICS[1]],
                  table=[["Name", "Score"], ["Ada", "42"]])
    doc = mem.add_document(p)
    text = mem.document_text(doc.id)
    assert "Memo heading" in text and "pinch of salt" in text
    assert "Ada | 42" in text


FRENCH = ("Le café de la gare ouvre à sept heures. Les élèves y révisent la géographie, "
          "l’histoire et les mathématiques avant l’examen. « Où est la bibliothèque ? » "
          "demande un garçon. Ça dépend : elle a déménagé près du théâtre, à côté de l’hôpital.")
GERMAN = ("Die Größe der Straße überrascht: Für 5 € gibt es Äpfel, Öl und süße Brötchen – "
          "„frisch vom Bäcker“, sagt Herr Müller. Señora García bestellt à la carte.")


@pytest.mark.parametrize("text", [
    "Größe: 5 €",                      # short: a handful of bytes to go on
    "Café crème, s’il vous plaît.",
    GERMAN,
    "\n\n".join([FRENCH] * 8),          # long
])
def test_cp1252_text_is_read_right(mem, tmp_path, text):
    p = tmp_path / "latin.txt"
    p.write_bytes(text.encode("cp1252"))
    assert mem.document_text(mem.add_document(p).id) == text


def test_utf8_with_a_few_bad_bytes_keeps_the_rest(mem, tmp_path):
    good = GERMAN.encode("utf-8")
    cut = good.index("Brötchen".encode())
    # a stray cp1252 apostrophe pasted in, and a last character cut in half
    data = good[:cut] + b"\x92" + good[cut:] + " Grüß".encode()[:-1]
    p = tmp_path / "mixed.txt"
    p.write_bytes(data)
    expected = GERMAN.replace("Brötchen", "\ufffdBrötchen") + " Grü\ufffd"
    assert mem.document_text(mem.add_document(p).id) == expected
    short = tmp_path / "short.txt"
    short.write_bytes("Grüße aus Köln ".encode() + b"\xff")
    assert mem.document_text(mem.add_document(short).id) == "Grüße aus Köln \ufffd"


def test_other_encodings(mem, tmp_path):
    wide = tmp_path / "wide.txt"
    wide.write_bytes(FRENCH.encode("utf-16"))  # with BOM
    assert mem.document_text(mem.add_document(wide).id) == FRENCH
    russian = ("Вчера вечером мы долго гуляли по набережной и разговаривали о книгах. "
               "Погода была тёплой, а над рекой медленно садилось солнце.")
    ru = tmp_path / "ru.txt"
    ru.write_bytes(russian.encode("cp1251"))  # not Western: left to charset_normalizer
    assert mem.document_text(mem.add_document(ru).id) == russian


def test_dedup_by_content_hash(mem, tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "copy_of_a.txt"
    a.write_text(TOPICS[0] * 3)
    b.write_text(TOPICS[0] * 3)
    d1 = mem.add_document(a)
    d2 = mem.add_document(b)
    assert d1.id == d2.id and d1.sha256 == d2.sha256
    assert len(mem.list_documents()) == 1


@pytest.mark.parametrize("name,content,reason", [
    ("blob.bin", b"\x00\x01\x02", "unsupported file type .bin"),
    ("image.png", b"\x89PNG\r\n\x1a\n\x00\x00", "unsupported file type .png"),
    ("fake.txt", b"abc\x00\x00\x01\x02def" * 10, "binary content"),
    ("empty.txt", b"", "empty file"),
    ("blank.md", b"   \n\n  \t\n", "no text content"),
])
def test_refusals(mem, tmp_path, name, content, reason):
    p = tmp_path / name
    p.write_bytes(content)
    with pytest.raises(DocumentError) as ei:
        mem.add_document(p)
    _one_line_naming_once(str(ei.value), name, reason)
    assert mem.list_documents() == []


def _one_line_naming_once(msg: str, name: str, reason: str) -> None:
    assert msg.startswith(f"{name}: {reason}") and msg.count(name) == 1 and "\n" not in msg


def test_refuse_missing_folder_unreadable_and_too_large(tmp_path, hash_embedder):
    with Memory.open(tmp_path / "d", max_file_mb=0.001, embedder=hash_embedder) as mem:
        with pytest.raises(DocumentError) as ei:
            mem.add_document(tmp_path / "nope.txt")
        _one_line_naming_once(str(ei.value), "nope.txt", "no such file")
        (tmp_path / "papers").mkdir()
        with pytest.raises(DocumentError) as ei:
            mem.add_document(tmp_path / "papers")
        assert str(ei.value) == "papers: is a folder, not a file"
        big = tmp_path / "big.txt"
        big.write_text("x " * 2000)
        with pytest.raises(DocumentError) as ei:
            mem.add_document(big)
        assert str(ei.value) == "big.txt: too large (0.0038 MiB; limit 0.001 MiB)"
        link = tmp_path / "loop.txt"
        link.symlink_to(link)
        with pytest.raises(DocumentError) as ei:
            mem.add_document(link)
        _one_line_naming_once(str(ei.value), "loop.txt", "cannot read (")
    with Memory.open(tmp_path / "d", max_file_mb=20, embedder=hash_embedder) as mem:
        huge = tmp_path / "huge.md"
        with open(huge, "wb") as f:
            f.truncate(int(20.5 * 1024 * 1024))
        with pytest.raises(DocumentError) as ei:
            mem.add_document(huge)
        assert str(ei.value) == "huge.md: too large (20.5 MiB; limit 20 MiB)"
        assert mem.list_documents() == []


def test_forget_one_document(mem, tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("Owls hunt at night with silent feathers. " * 30)
    b.write_text("Bees dance to show where the flowers are. " * 30)
    da, db = mem.add_document(a), mem.add_document(b)
    s = mem.new_session("summarizer")
    summary = mem.add_message(s.id, "assistant", "Owls and bees.", token_ids=[1])
    mem.link_summary(summary.id, [da.id, db.id])
    mem.delete_document(da.id)
    assert [d.id for d in mem.list_documents()] == [db.id]
    assert mem.document_chunks(da.id) == [] and mem.get_document(da.id) is None
    assert [d.id for d in mem.summary_sources(summary.id)] == [db.id]  # the link went with it
    assert mem.get_message(summary.id).text == "Owls and bees."
    assert mem.vectors.count("chunks") == db.chunks == mem.stats()["chunks"]
    assert all(it.source.startswith("b.txt")
               for it in mem.context_for("owls hunt", k=5, kinds=("chunk",)))
    with pytest.raises(StoreError, match=f"no document {da.id}"):
        mem.delete_document(da.id)
    assert mem.add_document(a).id != da.id  # the same content can come back


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
