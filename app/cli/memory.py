"""`hexa memory ...`: manage the local memory from the command line.

``register(subparsers)`` adds the ``memory`` command; each sub-command sets ``func(args) -> int``.
Handlers read ``args.data_dir`` (resolved by the main CLI) and never load the LLM: token counts
use memory's tokenizer-free estimate. Errors follow ``hexa``'s contract (``app.cli.main``): a user
error raises ``memory.StoreError`` (``DocumentError`` for a refused file), printed as one line with
exit status 2; a command that did only part of its work says so and returns 2.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

PROG = "hexa"  # the prefix of every line on stderr, as app.cli.main prints errors


def register(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("memory", help="manage the local memory (history, documents, vectors)",
                              description="Manage hexa's local memory: conversations, documents "
                                          "and the vector index. Everything stays on this device.")
    p.set_defaults(func=_usage(p))
    sub = p.add_subparsers(dest="memory_command", metavar="COMMAND")

    a = sub.add_parser("add", help="ingest documents (txt, md, pdf, docx, html, source files)")
    a.add_argument("files", nargs="+", type=Path, metavar="FILE")
    a.add_argument("--session", type=int, default=None, metavar="ID", help="attach to this session id")
    a.add_argument("--max-mb", type=float, default=20.0, metavar="MIB",
                   help="size limit per file in MiB (default 20)")
    a.set_defaults(func=cmd_add)

    s = sub.add_parser("stats", help="counts and sizes of the store")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=cmd_stats)

    q = sub.add_parser("search", help="search past turns and document chunks")
    q.add_argument("query")
    q.add_argument("-k", type=int, default=5, metavar="N", help="number of results (default 5)")
    q.add_argument("--kind", choices=("all", "message", "chunk"), default="all")
    q.add_argument("--budget", type=int, default=4000, metavar="N", help="token budget for all results")
    q.add_argument("--relevant", action="store_true",
                   help="only what the assistant would send: similarity at least the calibrated threshold")
    q.add_argument("--json", action="store_true", help="print JSON")
    q.set_defaults(func=cmd_search)

    f = sub.add_parser("forget", help="delete a session and its messages, or a document")
    which = f.add_mutually_exclusive_group(required=True)
    which.add_argument("--session", type=int, metavar="ID", help="the session to forget")
    which.add_argument("--doc", type=int, metavar="ID", help="the document to forget "
                       "(`hexa memory docs` lists them)")
    f.set_defaults(func=cmd_forget)

    w = sub.add_parser("wipe", help="delete everything in memory (asks for confirmation)")
    w.add_argument("--yes", "-y", action="store_true", help="do not ask (for scripts)")
    w.set_defaults(func=cmd_wipe)

    e = sub.add_parser("export", help="export a session as Markdown or JSON")
    e.add_argument("--session", type=int, required=True, metavar="ID")
    e.add_argument("--format", choices=("md", "json"), default="md")
    e.add_argument("--output", "-o", type=Path, default=None, metavar="FILE", help="write to a file, not stdout")
    e.set_defaults(func=cmd_export)

    r = sub.add_parser("reindex", help="rebuild the vector index from the SQLite store")
    r.set_defaults(func=cmd_reindex)

    k = sub.add_parser("check", help="probe that search finds every stored vector",
                       description="Query the vector index with each stored embedding: each must "
                                   "come back among its own nearest. Exit status 1 when some do "
                                   "not (unless --repair rebuilds the index from SQLite).")
    k.add_argument("--repair", action="store_true",
                   help="rebuild the index from SQLite when vectors are unreachable")
    k.add_argument("--sample", action="store_true",
                   help="probe a sample (as after a crash) instead of every vector")
    k.set_defaults(func=cmd_check)

    ls = sub.add_parser("sessions", help="list sessions")
    ls.add_argument("--mode", default=None, metavar="MODE")
    ls.set_defaults(func=cmd_sessions)

    d = sub.add_parser("docs", help="list documents")
    d.set_defaults(func=cmd_docs)
    return p


# -- helpers ------------------------------------------------------------------------------------
def _usage(parser: argparse.ArgumentParser):
    def show(args) -> int:
        parser.print_help(sys.stderr)
        return 2
    return show


def _err(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr)


def _data_dir(args) -> Path:
    d = getattr(args, "data_dir", None)
    if d is None:
        from app.locations import locations
        d = locations().data
    return Path(d)


def _open(args, **kw):
    from memory import Memory

    from .. import settings
    from ..locations import locations

    # the [memory] options (checked: a bad value stops here, in one line, as every command does)
    loaded = getattr(args, "loaded", None) or settings.load(
        (getattr(args, "locations", None) or locations()).config_file)
    return Memory.open(_data_dir(args), tokenizer=None, on_notice=lambda m: _err(f"notice: {m}"),
                       options=settings.memory_options(loaded.settings), **kw)


def _fail(msg: str) -> int:
    """A refusal that is the user's to fix: one line, exit status 2 (as app.cli.main does)."""
    _err(msg)
    return 2


def _loading_note() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("loading embedding model…\r")
        sys.stderr.flush()


class Bar:
    """A one-line progress bar on stderr (only redrawn when stderr is a terminal)."""

    def __init__(self, label: str, unit: str = "chunks", width: int = 28):
        self.label, self.unit, self.width = label, unit, width
        self.tty = sys.stderr.isatty()
        self.shown = False
        self.last = 0.0

    def __call__(self, done: int, total: int) -> None:
        if not self.tty:
            return
        t = time.monotonic()
        if done < total and t - self.last < 0.05:
            return
        self.last = t
        frac = done / total if total else 1.0
        fill = int(frac * self.width)
        sys.stderr.write(f"\r{self.label[:30]:30} [{'#' * fill}{'.' * (self.width - fill)}] "
                         f"{done}/{total} {self.unit}")
        sys.stderr.flush()
        self.shown = True

    def end(self) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


# -- commands -----------------------------------------------------------------------------------
def cmd_add(args) -> int:
    from memory import DocumentError
    with _open(args, max_file_mb=args.max_mb) as mem:
        known = {d.sha256 for d in mem.list_documents()}
        if any(f.is_file() for f in args.files):
            _loading_note()
            mem.warmup()  # load the embedding model up front so per-file timings are honest
        failed = 0
        for path in args.files:
            try:
                _add_one(mem, path, args.session, known)
            except DocumentError as e:  # this file is refused; the others are still read in
                _err(str(e))
                failed += 1
    if failed:
        return _fail(f"{failed} of {len(args.files)} file(s) not added")
    return 0


def _add_one(mem, path: Path, session_id: int | None, known: set[str]) -> None:
    bar = Bar(path.name)
    t0 = time.perf_counter()
    try:
        doc = mem.add_document(path, progress=bar, session_id=session_id)
    finally:
        bar.end()  # also before an error line or Ctrl-C's
    dt = time.perf_counter() - t0
    if doc.sha256 in known:
        print(f"{doc.name}: already in memory (document {doc.id})")
        return
    known.add(doc.sha256)
    rate = f", {doc.chunks / dt:.1f} chunks/s" if dt > 0 else ""
    print(f"{doc.name}: added as document {doc.id} ({doc.chunks} chunks, {doc.chars} chars, "
          f"{dt:.1f} s{rate})")


def cmd_stats(args) -> int:
    with _open(args) as mem:
        st = mem.stats()
    if args.json:
        print(json.dumps(st, indent=2))
        return 0
    mb = lambda n: f"{n / 1e6:.1f} MB"  # noqa: E731
    rows = [("store", st["path"]), ("schema", f"v{st['schema_version']}"),
            ("sessions", st["sessions"]), ("messages", st["messages"]),
            ("responses (drafting sources)", st["responses"]),
            ("documents", st["documents"]), ("chunks", st["chunks"]),
            ("vectors pending", st["pending_vectors"]),
            ("database size", mb(st["db_bytes"])), ("vector index size", mb(st["vector_bytes"]))]
    for key, label in (("avg_ttft_ms", "mean TTFT (ms)"), ("avg_ms_per_token", "mean ms/token"),
                       ("avg_mean_accepted", "mean accepted/step")):
        if st.get(key) is not None:
            rows.append((label, st[key]))
    if st.get("sessions_by_mode"):
        rows.append(("sessions by mode", ", ".join(f"{k}: {v}" for k, v in
                                                   st["sessions_by_mode"].items())))
    w = max(len(r[0]) for r in rows)
    for k, v in rows:
        print(f"{k:<{w}}  {v}")
    return 0


def cmd_search(args) -> int:
    from dataclasses import asdict

    from memory import Policy

    kinds = ("message", "chunk") if args.kind == "all" else (args.kind,)
    with _open(args) as mem:
        _loading_note()
        mem.warmup()
        t0 = time.perf_counter()
        # a search shows the nearest whatever their similarity (the scores say how near);
        # --relevant applies the assistant's threshold and ranking
        policy = Policy() if args.relevant else Policy.legacy()
        items = mem.context_for(args.query, k=args.k, token_budget=args.budget, kinds=kinds, policy=policy)
        ms = (time.perf_counter() - t0) * 1000
    if args.json:
        print(json.dumps([asdict(it) for it in items], ensure_ascii=False, indent=2))
        return 0
    if not items:
        print("no results")
        return 0
    for i, it in enumerate(items, 1):
        text = " ".join(it.text.split())
        print(f"{i}. [{it.score:.3f}] {it.kind}: {it.source}")
        print(f"   {text[:300]}{'…' if len(text) > 300 else ''}")
    print(f"({len(items)} result(s), {ms:.0f} ms)", file=sys.stderr)
    return 0


def cmd_forget(args) -> int:
    from memory import StoreError
    with _open(args) as mem:
        if args.doc is not None:
            d = mem.get_document(args.doc)
            if d is None:
                raise StoreError(f"no document {args.doc}")
            mem.delete_document(d.id)
            print(f"forgot document {d.id} ({d.name}, {d.chunks} chunks)")
            return 0
        s = mem.get_session(args.session)
        if s is None:
            raise StoreError(f"no session {args.session}")
        n = len(mem.messages(s.id))
        mem.delete_session(s.id)
    print(f"forgot session {s.id} ({s.title!r}, {n} messages)")
    return 0


def cmd_wipe(args) -> int:
    if not args.yes:
        if not sys.stdin.isatty():
            return _fail("refusing to wipe without confirmation: stdin is not a terminal "
                         "(use --yes)")
        with _open(args) as mem:
            st = mem.stats()
        print(f"This deletes {st['sessions']} sessions, {st['messages']} messages and "
              f"{st['documents']} documents from {st['path']}.", file=sys.stderr)
        print("Type 'yes' to wipe the memory: ", end="", file=sys.stderr, flush=True)
        try:
            answer = input()  # the prompt went to stderr with the question: stdout stays clean
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("yes", "y"):
            return _fail("wipe cancelled")
    with _open(args) as mem:
        mem.wipe()
    print("memory wiped")
    return 0


def cmd_export(args) -> int:
    with _open(args) as mem:
        text = mem.export_session(args.session, args.format)
    if args.output:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as e:
            return _fail(f"cannot write {args.output}: {e.strerror or e}")
        print(f"session {args.session} exported to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_reindex(args) -> int:
    with _open(args) as mem:
        t0 = time.perf_counter()
        bar = Bar("reindex", unit="items")
        n = mem.reindex(progress=bar)
        bar.end()
    print(f"reindexed {n} vectors in {time.perf_counter() - t0:.1f} s")
    return 0


def cmd_check(args) -> int:
    with _open(args) as mem:
        t0 = time.perf_counter()
        rep = mem.check(full=not args.sample, repair=args.repair)
        dt = time.perf_counter() - t0
    line = (f"{rep.probed} of {rep.vectors} vectors probed, {rep.unreachable} unreachable "
            f"({rep.probe_s:.1f} s probe, {dt:.1f} s in all)")
    if rep.unreachable_exact:
        line += (f"; {rep.unreachable_exact} more not reached by HNSW in collections small enough "
                 f"to be searched exactly (no effect on search)")
    if rep.unstored:
        line += f"; {rep.unstored} without a stored embedding"
    if rep.repaired:
        still = (f"; {rep.still_unreachable} still unreachable after it (the limit of chromadb's "
                 f"approximate HNSW, not damage)" if rep.still_unreachable else "")
        print(f"{line}; rebuilt from SQLite in {rep.repair_s:.1f} s{still}")
        return 0
    if rep.unreachable:
        _err(f"{line}: e.g. {', '.join(rep.examples)}; run `hexa memory check --repair`")
        return 1
    print(line)
    return 0


def cmd_sessions(args) -> int:
    with _open(args) as mem:
        sessions = mem.list_sessions(args.mode)
        for s in sessions:
            n = len(mem.messages(s.id))
            print(f"{s.id:>5}  {time.strftime('%Y-%m-%d %H:%M', time.localtime(s.updated))}  "
                  f"{s.mode or '-':<10} {n:>4} msg  {s.title}")
    if not sessions:
        print("no sessions")
    return 0


def cmd_docs(args) -> int:
    with _open(args) as mem:
        docs = mem.list_documents()
    for d in docs:
        print(f"{d.id:>5}  {d.chunks:>5} chunks  {d.chars:>9} chars  {d.name}")
    if not docs:
        print("no documents")
    return 0
