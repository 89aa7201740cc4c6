"""`hexa memory ...`: manage the local memory from the command line.

``register(subparsers)`` adds the ``memory`` command; each sub-command sets ``func(args) -> int``.
Handlers read ``args.data_dir`` (resolved by the main CLI) and never load the LLM: token counts
use memory's tokenizer-free estimate. Errors are one line on stderr with a non-zero exit.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

PROG = "hexa memory"


def register(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("memory", help="manage the local memory (history, documents, vectors)",
                              description="Manage hexa's local memory: conversations, documents "
                                          "and the vector index. Everything stays on this device.")
    p.set_defaults(func=_usage(p))
    sub = p.add_subparsers(dest="memory_command", metavar="COMMAND")

    a = sub.add_parser("add", help="ingest documents (txt, md, pdf, docx, html, source files)")
    a.add_argument("files", nargs="+", type=Path, metavar="FILE")
    a.add_argument("--session", type=int, default=None, help="attach to this session id")
    a.add_argument("--max-mb", type=float, default=20.0, help="size limit per file (default 20)")
    a.set_defaults(func=cmd_add)

    s = sub.add_parser("stats", help="counts and sizes of the store")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=cmd_stats)

    q = sub.add_parser("search", help="search past turns and document chunks")
    q.add_argument("query")
    q.add_argument("-k", type=int, default=5, help="number of results (default 5)")
    q.add_argument("--kind", choices=("all", "message", "chunk"), default="all")
    q.add_argument("--budget", type=int, default=4000, help="token budget for all results")
    q.add_argument("--json", action="store_true", help="print JSON")
    q.set_defaults(func=cmd_search)

    f = sub.add_parser("forget", help="delete a session and its messages")
    f.add_argument("--session", type=int, required=True, metavar="ID")
    f.set_defaults(func=cmd_forget)

    w = sub.add_parser("wipe", help="delete everything in memory (asks for confirmation)")
    w.add_argument("--yes", "-y", action="store_true", help="do not ask (for scripts)")
    w.set_defaults(func=cmd_wipe)

    e = sub.add_parser("export", help="export a session as Markdown or JSON")
    e.add_argument("--session", type=int, required=True, metavar="ID")
    e.add_argument("--format", choices=("md", "json"), default="md")
    e.add_argument("--output", "-o", type=Path, default=None, help="write to a file, not stdout")
    e.set_defaults(func=cmd_export)

    r = sub.add_parser("reindex", help="rebuild the vector index from the SQLite store")
    r.set_defaults(func=cmd_reindex)

    ls = sub.add_parser("sessions", help="list sessions")
    ls.add_argument("--mode", default=None)
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
    return Memory.open(_data_dir(args), tokenizer=None,
                       on_notice=lambda m: _err(f"notice: {m}"), **kw)


def _guard(fn):
    """Turn any failure into one line on stderr and a non-zero exit, never a traceback."""
    def run(args) -> int:
        from memory import MemoryError
        try:
            return fn(args)
        except KeyboardInterrupt:
            print(file=sys.stderr)
            _err("interrupted")
            return 130
        except MemoryError as e:
            _err(str(e))
            return 1
        except BrokenPipeError:
            return 0
        except Exception as e:  # noqa: BLE001 - the contract is "never a traceback"
            first = (str(e).strip().splitlines() or [""])[0]
            _err(f"error: {type(e).__name__}: {first}" if first else f"error: {type(e).__name__}")
            return 1
    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


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
@_guard
def cmd_add(args) -> int:
    from memory import DocumentError
    mem = _open(args, max_file_mb=args.max_mb)
    failed = 0
    try:
        known = {d.sha256 for d in mem.list_documents()}
        if any(f.is_file() for f in args.files):
            _loading_note()
            mem.warmup()  # load the embedding model up front so per-file timings are honest
        for path in args.files:
            bar = Bar(path.name)
            t0 = time.perf_counter()
            try:
                doc = mem.add_document(path, progress=bar, session_id=args.session)
            except DocumentError as e:
                bar.end()
                _err(str(e))
                failed += 1
                continue
            except Exception as e:  # one bad file never loses the others
                bar.end()
                _err(f"{path.name}: {type(e).__name__}: {e}")
                failed += 1
                continue
            bar.end()
            dt = time.perf_counter() - t0
            if doc.sha256 in known:
                print(f"{doc.name}: already in memory (document {doc.id})")
            else:
                known.add(doc.sha256)
                rate = f", {doc.chunks / dt:.1f} chunks/s" if dt > 0 else ""
                print(f"{doc.name}: added as document {doc.id} ({doc.chunks} chunks, "
                      f"{doc.chars} chars, {dt:.1f} s{rate})")
    finally:
        mem.close()
    if failed:
        _err(f"{failed} of {len(args.files)} file(s) not added")
    return 1 if failed else 0


@_guard
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


@_guard
def cmd_search(args) -> int:
    kinds = ("message", "chunk") if args.kind == "all" else (args.kind,)
    with _open(args) as mem:
        _loading_note()
        mem.warmup()
        t0 = time.perf_counter()
        items = mem.context_for(args.query, k=args.k, token_budget=args.budget, kinds=kinds)
        ms = (time.perf_counter() - t0) * 1000
    if args.json:
        print(json.dumps([it.__dict__ for it in items], ensure_ascii=False, indent=2))
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


@_guard
def cmd_forget(args) -> int:
    with _open(args) as mem:
        s = mem.get_session(args.session)
        if s is None:
            _err(f"no session {args.session}")
            return 1
        n = len(mem.messages(s.id))
        mem.delete_session(s.id)
    print(f"forgot session {s.id} ({s.title!r}, {n} messages)")
    return 0


@_guard
def cmd_wipe(args) -> int:
    if not args.yes:
        if not sys.stdin.isatty():
            _err("refusing to wipe without confirmation: stdin is not a terminal (use --yes)")
            return 1
        with _open(args) as mem:
            st = mem.stats()
        print(f"This deletes {st['sessions']} sessions, {st['messages']} messages and "
              f"{st['documents']} documents from {st['path']}.", file=sys.stderr)
        try:
            answer = input("Type 'yes' to wipe the memory: ")
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("yes", "y"):
            _err("wipe cancelled")
            return 1
    with _open(args) as mem:
        mem.wipe()
    print("memory wiped")
    return 0


@_guard
def cmd_export(args) -> int:
    with _open(args) as mem:
        text = mem.export_session(args.session, args.format)
    if args.output:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as e:
            _err(f"cannot write {args.output}: {e.strerror or e}")
            return 1
        print(f"session {args.session} exported to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


@_guard
def cmd_reindex(args) -> int:
    with _open(args) as mem:
        t0 = time.perf_counter()
        bar = Bar("reindex", unit="items")
        n = mem.reindex(progress=bar)
        bar.end()
    print(f"reindexed {n} vectors in {time.perf_counter() - t0:.1f} s")
    return 0


@_guard
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


@_guard
def cmd_docs(args) -> int:
    with _open(args) as mem:
        docs = mem.list_documents()
    for d in docs:
        print(f"{d.id:>5}  {d.chunks:>5} chunks  {d.chars:>9} chars  {d.name}")
    if not docs:
        print("no documents")
    return 0
