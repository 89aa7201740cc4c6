"""What ``hexa agent-bench`` prints: the exploration's cost per app, then one table row per rung ×
app (and an "all" row per rung) over the runs recorded by ``agent_bench_runs``."""
from __future__ import annotations

import statistics


def exploration_table(rows: list[dict]) -> str:
    lines = ["| explored | actions | screens | edges | minutes | state |", "|---|---|---|---|---|---|"]
    for r in rows:
        state = "complete" if r["finished"] else "budget spent" if not r["note"] else r["note"]
        lines.append(f"| {r['app']} | {r['actions']} | {r['screens']} | {r['edges']} | "
                     f"{r['seconds'] / 60:.1f} | {state} |")
    return "\n".join(lines)


def _pct(rs: list[dict]) -> str:
    if not rs:
        return "–"
    ok = sum(bool(r["success"]) for r in rs)
    return f"{ok / len(rs):.0%} ({ok}/{len(rs)})"


def _mean(values: list) -> str:
    values = [v for v in values if v is not None]
    return f"{statistics.fmean(values):.2f}" if values else "–"


def row(rung: str, app: str, rs: list[dict]) -> str:
    first = [r for r in rs if r["attempt"] == 1]
    later = [r for r in rs if r["attempt"] > 1]
    return (f"| {rung} | {app} | {_pct(first)} | {_pct(later)} | "
            f"{statistics.fmean(r['steps'] for r in rs):.1f} | {sum(r['invalid'] for r in rs)} | "
            f"{sum(r['unconfirmed'] for r in rs)} | {sum(r['model_asked'] for r in rs)} | "
            f"{_mean([r['accepted_per_step'] for r in rs])} | {_mean([r['ms_per_token'] for r in rs])} |")


def results_table(runs: list[dict]) -> str:
    """First attempt and repeats success, average steps, invalid actions, sensitive actions taken
    without a confirmation, how often the model was asked and its figures when it was."""
    lines = ["| rung | app | first attempt | repeats | avg steps | invalid | unconfirmed sensitive "
             "| model asked | accepted tok/step | ms/token |", "|---|---|---|---|---|---|---|---|---|---|"]
    rungs = list(dict.fromkeys(r["rung"] for r in runs))
    for rung in rungs:
        mine = [r for r in runs if r["rung"] == rung]
        for app in sorted({r["app"] for r in mine}):
            lines.append(row(rung, app, [r for r in mine if r["app"] == app]))
        lines.append(row(rung, "all", mine))
    return "\n".join(lines)
