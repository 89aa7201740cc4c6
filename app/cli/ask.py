"""``hexa ask``: stream one answer to stdout; ``--session``/``--continue``/``--save`` make it a turn
of a stored conversation (the same assistant, memory and drafting sources as the app)."""
from __future__ import annotations

import sys

from .. import settings as config


def register(sub) -> None:
    ask = sub.add_parser("ask", help="answer one prompt, streamed to stdout",
                         description="Answer one prompt. A summary line (TTFT, prefill and decode "
                                     "speed, tokens per step) goes to stderr.")
    ask.add_argument("prompt", nargs="?", help="the question (default: read standard input)")
    ask.add_argument("--system", default=None, metavar="TEXT", help="system prompt (with a session: saved as its system prompt)")
    ask.add_argument("--seed", type=int, default=None, metavar="N", help="sampling seed")
    ask.add_argument("--stop", action="append", default=[], metavar="TEXT", help="stop string (repeatable; one-shot only)")
    conv = ask.add_mutually_exclusive_group()
    conv.add_argument("--session", type=int, metavar="ID", help="continue stored session ID")
    conv.add_argument("-c", "--continue", dest="resume", action="store_true",
                      help="continue the most recent assistant session")
    conv.add_argument("--save", action="store_true", help="store this exchange as a new session")
    ask.add_argument("-v", "--verbose", action="store_true",
                     help="show on stderr the notes retrieved from memory and the prompt's size")
    ctx = ask.add_mutually_exclusive_group()
    ctx.add_argument("--no-retrieval", dest="retrieve", action="store_false", default=None,
                     help="send this message without context from memory")
    ctx.add_argument("--retrieval", dest="retrieve", action="store_true",
                     help="retrieve context for this message even if retrieval is off")
    config.add_flags(ask.add_argument_group("model"), config.MODEL_FLAGS, top_level=False)
    config.add_flags(ask.add_argument_group("generation"), config.GENERATION_FLAGS, top_level=False)
    ask.set_defaults(func=cmd_ask, uses_settings=True)


def read_prompt(prompt: str | None) -> str:
    from engine.errors import EngineError

    if prompt is None:
        if sys.stdin is None or sys.stdin.isatty():
            raise EngineError("no prompt: pass one as an argument or on standard input")
        prompt = sys.stdin.read()
    if not prompt.strip():
        raise EngineError("empty prompt")
    return prompt


def cmd_ask(args) -> int:
    from agents.sampling import generation_options
    from engine.errors import EngineError

    from ..loading import load_engine

    prompt = read_prompt(args.prompt)
    s = args.loaded.settings
    engine = load_engine(s, args.locations)
    if args.session is None and not args.resume and not args.save:
        if args.retrieve:
            raise EngineError("--retrieval needs a conversation in memory (--save, --session or --continue)")
        events = engine.generate(
            ([{"role": "system", "content": args.system}] if args.system else [])
            + [{"role": "user", "content": prompt}],
            max_new_tokens=s.max_tokens, temperature=s.temperature, top_p=s.top_p, seed=args.seed,
            stop=args.stop, method=s.method, **generation_options(s, "assistant"))
        return stream(events)
    return ask_in_session(args, engine, prompt)


def ask_in_session(args, engine, prompt: str) -> int:
    from agents.assistant import Assistant
    from agents.common import AgentError

    from ..loading import open_memory

    if args.stop:
        raise AgentError("--stop works only for a one-shot answer (without --session, --continue or --save)")
    with open_memory(args.locations, tokenizer=engine.encode, settings=args.loaded.settings) as memory:
        if args.save:
            sid = memory.new_session("assistant", model=engine.model_name).id
        elif args.resume:
            sessions = memory.list_sessions(mode="assistant")
            if not sessions:
                raise AgentError("no conversation to continue: start one with --save or in the app")
            sid = sessions[0].id
        else:
            session = memory.get_session(args.session)
            if session is None or session.mode != "assistant":
                raise AgentError(f"no assistant session {args.session} (hexa memory sessions lists them)")
            sid = session.id
        if args.system:
            memory.set_system_prompt(sid, args.system)
        from ..routing import build_router

        router, note = build_router(engine, args.loaded.settings, args.data_dir)   # a [servers.X] configured
        agent = Assistant(engine, memory, args.loaded.settings, router, note)
        code = stream(agent.respond(sid, prompt, retrieval=args.retrieve), verbose=args.verbose)
        print(f"hexa: session {sid} (continue with: hexa ask --session {sid} …)", file=sys.stderr)
        return code


def stream(events, verbose: bool = False) -> int:
    """Write Text deltas to stdout as they come; notices, what was retrieved and the closing
    figures to stderr (``verbose``: the retrieved notes themselves and the prompt's size)."""
    from agents.assistant import describe, details
    from agents.events import Saved
    from engine import Done, Notice, Text

    done = None
    for ev in events:
        if isinstance(ev, Saved) and ev.role == "user":
            line = describe(ev.context)
            if line or verbose:
                print(f"hexa: {line or 'context: none retrieved'}", file=sys.stderr)
            if verbose:
                for note in details(ev.context).splitlines():
                    print(f"hexa:   {note}", file=sys.stderr)
                print(f"hexa: prompt {ev.prompt_tokens} tokens", file=sys.stderr)
        elif isinstance(ev, Text):
            sys.stdout.write(ev.delta)
            sys.stdout.flush()
        elif isinstance(ev, Notice):
            print(f"hexa: {ev.message}", file=sys.stderr)
        elif isinstance(ev, Done):
            done = ev
    sys.stdout.write("\n")
    if done is not None:
        reused = f", {done.reused_tokens} reused" if done.reused_tokens else ""   # from a kept prefix
        print(f"[{done.method}] TTFT {done.ttft_ms:.0f} ms | prefill {done.prefill_tok_s:.1f} tok/s "
              f"({done.prompt_tokens} tok{reused}) | decode {done.decode_tok_s:.1f} tok/s "
              f"({done.new_tokens} tok, {done.mean_accepted:.2f}/step) | stop: {done.stop_reason}",
              file=sys.stderr)
    return 0
