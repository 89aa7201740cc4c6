"""User settings, declared once: each option's type, check, environment variable, flag and help.

Every entry point (the TUI, ``hexa ask``, ``hexa bench``, ``hexa memory``) reads the same
``Settings``. Precedence, lowest to highest: defaults < ``config.toml`` < ``HEXA_*`` environment <
command-line flags. ``load`` remembers where each value came from, so that saving from the
settings screen writes only what the user changed there (a one-off ``HEXA_MAX_TOKENS=7`` or
``--method sam`` is never written to the file), and so that one bad value costs only that value.

The advanced options live in tables of the file (``[engine]``, ``[qnn]``, ``[memory]``): the field
``engine_linear`` is ``linear`` under ``[engine]``. They keep the environment names they had before
they were settings (``HEXA_LINEAR``, ``HEXA_SPIN_US``, …). The engine and the memory read no
environment variable: they get ``engine_options()`` and ``memory_options()`` from here.
docs/settings.md lists every option.
"""
from __future__ import annotations

import argparse
import os
import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

import tomli_w

from engine.methods import BACKENDS, DEFAULT_CONTEXT, DEFAULT_METHOD, METHODS
from engine.options import (DECODE_CHOICES, DEFAULT_SPIN_US, ISA_CHOICES, KV_CHOICES, LINEAR_CHOICES, PROMPT_CHOICES,
                            SPIN_US_MAX)

from .keys import KEYS


class ConfigError(Exception):
    """A user-fixable problem with the configuration (one line)."""


@dataclass(frozen=True)
class Spec:
    """How one option is read and checked."""
    help: str
    flag: str | None = None            # command-line flag; None: file (and environment) only
    choices: tuple[str, ...] = ()
    low: float | None = None           # inclusive bounds for numbers
    high: float | None = None
    env: bool | str = True             # True: read from HEXA_<NAME>; a string: that variable
    section: str | None = None         # the file's table ([engine] …): the field is <section>_<key>
    aliases: tuple[str, ...] = ()      # older variable names, read when ``env``'s is not set
    folder: bool = False               # a path that must be an existing folder


def option(default: Any, help: str, **spec: Any) -> Any:
    if isinstance(default, dict):
        return field(default_factory=dict, metadata={"spec": Spec(help, **spec)})
    return field(default=default, metadata={"spec": Spec(help, **spec)})


@dataclass(frozen=True)
class Settings:
    model: str | None = option(
        None, "a .gguf file, a Hugging Face folder or a hub id (default: the embedded "
              "SmolLM2-135M-Instruct)", flag="--model")
    backend: str = option("torch", "runtime: torch (CPU) or qnn (static graphs on the Hexagon NPU)",
                          flag="--backend", choices=BACKENDS)
    method: str = option(DEFAULT_METHOD, "decoding method", flag="--method", choices=METHODS)
    context: int | None = option(None, "context window in tokens (default: " + ", ".join(
        f"{n} on {b}" for b, n in DEFAULT_CONTEXT.items()) + ")", flag="--context", low=64)
    threads: int | None = option(None, "CPU threads (default: all cores)", flag="--threads", low=1)
    soc: str | None = option(None, "qnn: the Snapdragon the graphs are built for (a QNN SoC id or part "
                             "number, e.g. 57 or SM8650 for 8 Gen 3, 69 or SM8750 for 8 Elite, 60 or "
                             "SC8380XP for X Elite; default 57)", flag="--soc",
                             aliases=("HEXA_QNN_SOC",))
    cost_profile: str | None = option(None, "qnn: size trees and plan graph switching with a device cost "
                                      "profile (a FILE, or a DEVICE profiled by `hexa npu profile`)",
                                      flag="--cost-profile")
    max_tokens: int = option(256, "most new tokens per answer", flag="--max-tokens", low=1)
    temperature: float = option(0.0, "0 is greedy decoding", flag="--temperature", low=0.0, high=2.0)
    top_p: float = option(1.0, "nucleus sampling mass", flag="--top-p", low=0.01, high=1.0)
    retrieval: bool = option(True, "retrieve context from memory for each request")
    history_drafting: bool = option(True, "past responses become drafting sources")
    # retrieval (issue 24): the most context one message may bring; a short question brings less
    # (8 tokens per token of it, at least 64: see memory.retrieval.budget_for)
    retrieval_tokens: int = option(384, "most tokens of retrieved context per message (a short "
                                   "question gets less)", low=0, high=4096)
    device: str = option("127.0.0.1:5555", "the phone the UI agent drives: HOST:PORT of its adbd "
                         "(a phone after `adb tcpip 5555`, or `hexa phone serve`)", flag="--device")
    agent_steps: int = option(15, "most actions of one UI-agent episode", flag="--max-steps", low=1, high=100)
    agent_policy: str = option("planner", "how the UI agent picks each step: planner (paths through the "
                               "explored apps), model (the language model settles close calls), top "
                               "(tap the best-ranked element)", flag="--policy",
                               choices=("planner", "model", "top"))
    agent_elements: int = option(10, "screen elements shown to the model per step (the best "
                                 "ranked; any the task names are kept)", low=3, high=60)
    keymap: dict[str, str] = option({}, "binding id = keys (see F1)", env=False)
    # -- hexa serve: the engine behind an OpenAI-compatible HTTP API (docs/serve.md)
    serve_host: str = option("127.0.0.1", "address `hexa serve` listens on (any but a loopback address "
                             "needs an API key)", flag="--host")
    serve_port: int = option(8765, "port `hexa serve` listens on (0: any free port, printed at start)",
                             flag="--port", low=0, high=65535)
    serve_queue: int = option(8, "requests `hexa serve` keeps waiting behind the one decoding; more "
                              "are answered 429", flag="--queue", low=0, high=100000)
    engine_process: str = option("child", "where the app runs the engine: child (a `hexa serve` process of "
                                 "its own: drawing never waits for it) or inline (in the app's process)",
                                 choices=("inline", "child"))
    engine_url: str | None = option(None, "the app uses the `hexa serve` already running at this URL (its "
                                    "key in the serve_api_key_env variable) instead of loading a model")
    serve_api_key_env: str = option("HEXA_SERVE_API_KEY", "the environment variable holding the API key "
                                    "`hexa serve` requires of clients (needed on a non-loopback address)")
    # -- device and server (DiSCo routing; docs/routing.md) --
    servers: dict[str, dict] = option({}, "OpenAI-compatible endpoints: [servers.NAME] url, model, api_key_env "
                                      "(the NAME of an environment variable holding the key), price_in, "
                                      "price_out (per token), api (auto, completions or chat)", env=False)
    route: str = option("disco", "where requests run when a server is configured", flag="--route-policy",
                        choices=("device", "server", "disco", "random"))
    route_budget: float = option(0.3, "routing budget b: the share of prompt tokens the dear side (the device "
                                 "or the server, from the prices) may take", low=0.01, high=0.99)
    device_price_in: float = option(0.0, "the device's cost per prompt token (its energy, priced by you)", low=0.0)
    device_price_out: float = option(0.0, "the device's cost per generated token", low=0.0)
    # -- answers that do not loop (docs/sampling.md): llama.cpp's knobs; unset: the mode's default
    repeat_penalty: float | None = option(None, "divide a recent token's logit by this (1: off; default: "
                                          "per mode)", flag="--repeat-penalty", low=0.5, high=3.0)
    repeat_last_n: int | None = option(None, "tokens the repeat/frequency/presence penalties look back "
                                       "(-1: all, 0: off)", flag="--repeat-last-n", low=-1)
    frequency_penalty: float | None = option(None, "lower a token's logit by this per recent occurrence",
                                             flag="--frequency-penalty", low=0.0, high=2.0)
    presence_penalty: float | None = option(None, "lower a recent token's logit by this",
                                            flag="--presence-penalty", low=0.0, high=2.0)
    dry_multiplier: float | None = option(None, "DRY: penalty on a token extending a repeated sequence "
                                          "(0: off)", flag="--dry-multiplier", low=0.0, high=5.0)
    dry_base: float | None = option(None, "DRY: penalty growth per repeated token", flag="--dry-base",
                                    low=1.0, high=4.0)
    dry_allowed_length: int | None = option(None, "DRY: repeats this long go unpenalised",
                                            flag="--dry-allowed-length", low=1, high=64)
    dry_last_n: int | None = option(None, "DRY: tokens looked back (-1: all)", flag="--dry-last-n", low=-1)
    penalize_prompt: bool | None = option(None, "the penalties count the prompt's tokens too (as llama.cpp); "
                                          "off: the answer's alone", flag="--penalize-prompt")
    top_k: int | None = option(None, "sampling: keep the k likeliest tokens (0: off)", flag="--top-k", low=0)
    min_p: float | None = option(None, "sampling: drop tokens under min_p x the likeliest's probability",
                                 flag="--min-p", low=0.0, high=0.99)

    # -- advanced: the engine's and the memory's knobs ([engine], [qnn], [memory] in the file;
    # the environment names they had before they were settings are kept)
    engine_linear: str = option("native", "which kernel runs the projections on the CPU backend: "
                                "native (hexa's kernels, else numpy's fp32 product) or numpy",
                                choices=LINEAR_CHOICES, section="engine", env="HEXA_LINEAR")
    engine_decode: str = option("int8", "the arithmetic on quantized weights, prefill and decoding: int8 "
                                "(integer dot products, as llama.cpp) or exact (fp32); lossless either way",
                                choices=DECODE_CHOICES, section="engine", env="HEXA_DECODE")
    engine_isa: str = option("auto", "native kernels' instruction set: auto (the best this CPU runs), or "
                             "one by name (avx2 keeps the AVX2 kernels on a CPU with VNNI)",
                             choices=ISA_CHOICES, section="engine",
                             env="HEXA_ISA")
    engine_kv: str = option("auto", "the KV cache's values: f16 (half the memory and attention reads, as "
                            "llama.cpp), f32, or auto (f16 on the native kernels in int8 arithmetic)",
                            choices=KV_CHOICES, section="engine", env="HEXA_KV")
    engine_prompt: str = option("bf16", "prompt rows on AMX tiles: bf16 (~1.4x faster prefill, closer to "
                                "fp32) or int8 (decoding's arithmetic: a prompt's KV is the steps' bits)",
                                choices=PROMPT_CHOICES, section="engine", env="HEXA_PROMPT")
    engine_spin_us: int = option(DEFAULT_SPIN_US, "microseconds the kernels' pool workers spin after a "
                                 "job before sleeping", low=0, high=SPIN_US_MAX, section="engine",
                                 env="HEXA_SPIN_US")
    engine_cc: str | None = option(None, "the C compiler that builds the native kernels (default: cc, "
                                   "gcc or clang on PATH)", section="engine", env="CC")
    qnn_switch: bool | None = option(None, "progressive graph switching during prefill (auto: on "
                                     "unless the binaries share weights)", section="qnn",
                                     env="HEXA_QNN_SWITCH")
    qnn_early_switch: bool = option(False, "switch a block before its last prefill chunk (not bit-"
                                    "identical on the HTP: off keeps outputs reproducible)",
                                    section="qnn", env="HEXA_QNN_EARLY_SWITCH")
    qnn_shared: bool | None = option(None, "weight-shared context binaries (auto: on a Snapdragon "
                                     "only; the x86-64 emulator cannot load them)", section="qnn",
                                     env="HEXA_QNN_SHARED")
    memory_embed_model: str | None = option(None, "another local sentence-transformers folder to embed "
                                            "with (default: the bundled all-MiniLM-L6-v2)",
                                            section="memory", env="HEXA_EMBED_MODEL", folder=True)
    memory_embed_threads: int | None = option(None, "threads the embedder computes a document's "
                                              "chunks with (default: every core)", low=1, section="memory",
                                              env="HEXA_EMBED_THREADS")

    @property
    def speculative(self) -> bool:
        return self.method != "vanilla"


def specs() -> dict[str, tuple[Spec, Any]]:
    """name -> (spec, declared type) for every option."""
    hints = {"str": str, "str | None": str, "int": int, "int | None": int, "float": float, "float | None": float,
             "bool": bool, "bool | None": bool, "dict[str, str]": dict, "dict[str, dict]": dict}
    return {f.name: (f.metadata["spec"], hints[str(f.type)]) for f in fields(Settings)}


def env_var(name: str) -> str:
    """The environment variable of option ``name`` ("" when it has none)."""
    spec = specs()[name][0]
    if isinstance(spec.env, str):
        return spec.env
    return f"HEXA_{name.upper()}" if spec.env else ""


def env_vars(name: str) -> tuple[str, ...]:
    """Every variable read for ``name``, the first set one winning."""
    var = env_var(name)
    return ((var,) if var else ()) + specs()[name][0].aliases


def key(name: str) -> str:
    """How the file spells option ``name``: ``max_tokens``, or ``engine.linear`` in a table."""
    spec = specs()[name][0]
    return f"{spec.section}.{name[len(spec.section) + 1:]}" if spec.section else name


# options that may be left unset (the empty string from a variable means unset too)
# unset (None): the mode's default (agents/sampling.py)
SAMPLING_OPTIONS = ("repeat_penalty", "repeat_last_n", "frequency_penalty", "presence_penalty", "dry_multiplier",
                    "dry_base", "dry_allowed_length", "dry_last_n", "penalize_prompt", "top_k", "min_p")
NULLABLE = ("model", "context", "threads", "engine_url", "engine_cc", "qnn_switch", "qnn_shared", "memory_embed_model",
            "memory_embed_threads") + SAMPLING_OPTIONS


def parse(name: str, raw: Any, origin: str = "") -> Any:
    """One value, checked and converted (strings from the environment or flags are parsed).
    ``origin`` says where it was written, for the message: a file, ``HEXA_X`` or ``--x``."""
    spec, kind = specs()[name]

    def bad(why: str) -> ConfigError:
        if re.fullmatch(r"[A-Z_][A-Z0-9_]*", origin):   # an environment variable
            where = f"{origin}={raw}"
        elif origin.startswith("--"):
            where = f"{origin} {raw}"
        else:
            where = f"{origin + ': ' if origin else ''}{key(name)} = {raw!r}"
        return ConfigError(f"{where}: {why}")

    if raw is None or (raw == "" and name in NULLABLE):
        if name in NULLABLE:
            return None
        raise bad("a value is needed")
    if kind is bool:
        if isinstance(raw, bool):
            return raw
        word = str(raw).strip().lower()
        if word == "auto" and name in NULLABLE:
            return None
        if word in ("1", "true", "yes", "on"):
            return True
        if word in ("0", "false", "no", "off"):
            return False
        raise bad("expected true, false or auto" if name in NULLABLE else "expected true or false")
    if kind in (int, float):
        what = "an integer" if kind is int else "a number"
        # bools are ints to Python and 1.5 would truncate to 1: neither is what the user meant
        if isinstance(raw, bool) or (kind is int and isinstance(raw, float)):
            raise bad(f"expected {what}")
        try:
            value = kind(raw)
        except (TypeError, ValueError):
            raise bad(f"expected {what}") from None
        if (spec.low is not None and value < spec.low) or (spec.high is not None and value > spec.high):
            def num(x: float) -> str:
                return str(int(x)) if float(x).is_integer() else f"{x:g}"
            span = (f"between {num(spec.low)} and {num(spec.high)}" if spec.high is not None
                    else f"at least {num(spec.low)}")
            raise bad(f"expected {what} {span}")
        return value
    if name == "servers":
        return parse_servers(raw, origin)
    if kind is dict:
        if not isinstance(raw, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                   for k, v in raw.items()):
            raise bad('expected a table of binding id = "keys"')
        unknown = sorted(set(raw) - set(KEYS))
        if unknown:
            raise ConfigError(f"{origin}: [keymap] has unknown binding id {unknown[0]!r} "
                              f"(F1 lists the ids)")
        return dict(raw)
    if not isinstance(raw, str) or not raw.strip():
        raise bad("expected a string")
    value = raw.strip().lower() if spec.section and spec.choices else raw.strip()
    if spec.choices and value not in spec.choices:
        raise bad(f"expected one of {', '.join(spec.choices)}")
    if spec.folder and not Path(raw.strip()).expanduser().is_dir():
        raise bad("expected an existing folder")
    return value


SERVER_KEYS = {"url": str, "model": str, "api_key_env": str, "price_in": float, "price_out": float, "api": str}
SERVER_APIS = ("auto", "completions", "chat")   # chat: the server takes messages only (most cloud APIs)


def parse_servers(raw: Any, origin: str) -> dict[str, dict]:
    """[servers.NAME] tables, each checked in one line: an http(s) url, known keys of the right type."""
    where = f"{origin + ': ' if origin else ''}[servers"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}]: expected tables [servers.NAME] with url = \"http://...\"")
    out = {}
    for name, table in raw.items():
        if not isinstance(table, Mapping) or not str(table.get("url", "")).startswith(("http://", "https://")):
            raise ConfigError(f"{where}.{name}]: needs url = \"http://HOST:PORT/v1\" (an OpenAI-compatible base URL)")
        for key, value in table.items():
            kind = SERVER_KEYS.get(key)
            ok = kind is not None and (isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
                                       if kind is float else isinstance(value, str))
            if not ok:
                raise ConfigError(f"{where}.{name}]: {key} = {value!r} is not allowed (keys: "
                                  f"{', '.join(SERVER_KEYS)}; prices are numbers >= 0)")
            if key == "api" and value not in SERVER_APIS:
                raise ConfigError(f"{where}.{name}]: api = {value!r}: expected one of {', '.join(SERVER_APIS)}")
        out[str(name)] = {k: (float(v) if SERVER_KEYS[k] is float else v) for k, v in table.items()}
    return out


# -- the file --------------------------------------------------------------------------------------
def read_file(path: Path) -> dict[str, Any]:
    """The raw TOML table of ``config.toml`` ({} when it does not exist)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text (save it as UTF-8)") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None


def save_changes(path: Path, changes: Mapping[str, Any]) -> Path:
    """Write ``changes`` into ``config.toml``, keeping every other key the user wrote there.

    A value equal to the default is removed from the file rather than written (so a later change
    of a default reaches the user). Raises ConfigError if the file cannot be read as TOML: it is
    the user's file, and rewriting it from scratch would lose what they wrote.
    """
    table = read_file(path)
    defaults = Settings()
    known = specs()
    for name, value in changes.items():
        parse(name, value, "settings")                     # never write a value we would refuse
        if name in ("keymap", "servers"):
            value = {**table.get(name, {}), **value} if isinstance(table.get(name), dict) else value
        section = known[name][0].section
        where, slot = table, name
        if section:                                        # [engine] linear = …
            if not isinstance(table.get(section), dict):
                table[section] = {}
            where, slot = table[section], name[len(section) + 1:]
        if value is None or (value == getattr(defaults, name) and name not in ("keymap", "servers")):
            where.pop(slot, None)
            if section and not where:
                table.pop(section)
        else:
            where[slot] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_bytes(tomli_w.dumps(table).encode())
    tmp.replace(path)
    return path


# -- loading ---------------------------------------------------------------------------------------
@dataclass
class Loaded:
    """The effective settings and where they came from."""
    settings: Settings
    path: Path
    origins: dict[str, str] = field(default_factory=dict)   # name -> "HEXA_X" / "--x" / "config.toml"
    problems: list[str] = field(default_factory=list)       # one line each (lenient loading only)

    def overridden(self, name: str) -> str | None:
        """The environment variable or flag that sets ``name`` for this run, if any."""
        origin = self.origins.get(name)
        return origin if origin and origin != "config.toml" else None


def load(path: Path, *, env: Mapping[str, str] | None = None, flags: Mapping[str, Any] | None = None,
         strict: bool = True) -> Loaded:
    """Defaults < file < environment < flags. ``strict``: the first bad value raises ConfigError
    (command-line use: say it and stop). Lenient (the TUI): a bad value is skipped and reported in
    ``problems``; everything else still applies."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    problems: list[str] = []

    def take(name: str, raw: Any, origin: str, label: str) -> None:
        try:
            values[name] = parse(name, raw, origin)
            origins[name] = label
        except ConfigError as exc:
            if strict:
                raise
            problems.append(str(exc))

    try:
        table = read_file(path)
    except ConfigError as exc:
        if strict:
            raise
        problems.append(str(exc))
        table = {}
    known = specs()
    sections = {spec.section for spec, _ in known.values() if spec.section}

    def unknown(why: str) -> None:
        if strict:
            raise ConfigError(f"{path}: {why}")
        problems.append(f"{path}: {why}")

    for name, raw in table.items():
        if name in sections:
            if not isinstance(raw, dict):
                unknown(f"[{name}] must be a table of options")
                continue
            for sub, value in raw.items():
                full = f"{name}_{sub}"
                if full in known and known[full][0].section == name:
                    take(full, value, str(path), "config.toml")
                else:
                    unknown(f"[{name}] has no option {sub!r} (known: "
                            f"{', '.join(n[len(name) + 1:] for n, (s, _) in known.items() if s.section == name)})")
            continue
        if name not in known or known[name][0].section:
            unknown(f"unknown setting {name!r} (known: {', '.join(n for n, (s, _) in known.items() if not s.section)}"
                    f"; tables: {', '.join(sorted(sections))})")
            continue
        take(name, raw, str(path), "config.toml")
    for name in known:
        for var in env_vars(name):
            if env.get(var, "") != "":
                take(name, env[var], var, var)
                break
    for name, raw in (flags or {}).items():
        if raw is not None:
            take(name, raw, known[name][0].flag or name, known[name][0].flag or name)
    return Loaded(Settings(**values), path, origins, problems)


# -- command-line flags ----------------------------------------------------------------------------
def add_flags(parser: argparse.ArgumentParser, names: tuple[str, ...], *, top_level: bool) -> None:
    """Flags for these options. A subcommand's copy must not reset a value given before the
    subcommand (``hexa --model M ask`` and ``hexa ask --model M`` both work)."""
    known = specs()
    for name in names:
        spec, kind = known[name]
        extra: dict[str, Any] = {}
        if spec.choices:
            extra["metavar"] = "{" + ",".join(spec.choices) + "}"
        else:            # what to type, not argparse's internal name (SETTING_DEVICE)
            extra["metavar"] = METAVARS.get(name) or {int: "N", float: "X"}.get(kind, name.upper())
        parser.add_argument(spec.flag, dest=f"setting_{name}", default=None if top_level else argparse.SUPPRESS,
                            help=f"{spec.help} [{env_var(name)}]", **extra)


def flag_values(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given as flags (raw strings: ``load`` checks them like any other source)."""
    return {k[len("setting_"):]: v for k, v in vars(args).items() if k.startswith("setting_") and v is not None}


METAVARS = {"model": "GGUF|DIR|HUB_ID", "device": "HOST:PORT", "cost_profile": "FILE|DEVICE"}
MODEL_FLAGS = ("model", "backend", "context", "method", "threads", "soc", "cost_profile")
GENERATION_FLAGS = ("max_tokens", "temperature", "top_p") + SAMPLING_OPTIONS
AGENT_FLAGS = ("device", "agent_steps")
SERVE_FLAGS = ("serve_host", "serve_port", "serve_queue")


def engine_options(settings: Settings):
    """The engine's advanced knobs, as ``Engine.load`` takes them."""
    from engine.options import EngineOptions

    return EngineOptions(linear=settings.engine_linear, decode=settings.engine_decode, isa=settings.engine_isa,
                         kv=settings.engine_kv, prompt=settings.engine_prompt, spin_us=settings.engine_spin_us, cc=settings.engine_cc, qnn_switch=settings.qnn_switch,
                         qnn_early_switch=settings.qnn_early_switch, qnn_shared=settings.qnn_shared)


def memory_options(settings: Settings):
    """The memory's advanced knobs, as ``Memory`` takes them."""
    from memory.options import MemoryOptions

    model = settings.memory_embed_model
    return MemoryOptions(Path(model).expanduser() if model else None, settings.memory_embed_threads)


def apply(settings: Settings, **changes: Any) -> Settings:
    """A copy with ``changes`` checked and applied."""
    return replace(settings, **{k: parse(k, v, "settings") for k, v in changes.items()})
