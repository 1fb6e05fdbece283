"""`robench eval --dry-run`'s output: the plan's estimated passes as a markdown table, then
its totals and the wall-time estimate (or why there is none); the CLI prints it."""

from __future__ import annotations

from robench.evaluation.planning.dry_run import RunPlan


def _seconds(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def plan_text(plan: RunPlan) -> str:
    """The plan as stdout shows it (markdown: readable on a terminal and piped)."""
    lines = [
        f"Dry run: {plan.model} x {plan.suite} on {plan.device} ({plan.classes} classes); "
        "nothing was attacked.",
        "",
        "| result | kind | dataset | samples | passes/sample (est.) | passes (est.) |",
        "|---|---|---|---:|---:|---:|",
    ]
    for r in plan.results:
        lines.append(
            f"| {r.label} | {r.kind} | {r.dataset} | {r.samples} | {r.passes_per_sample} "
            f"| {r.passes} |"
        )
    if plan.sanity_samples:
        lines.append(
            f"| sanity battery | sanity | default | {plan.sanity_samples} "
            f"| {plan.sanity_passes // plan.sanity_samples} | {plan.sanity_passes} |"
        )
    lines += [
        "",
        f"Total: {plan.total_passes} model passes (estimated upper bound; a forward 1, "
        "a forward and backward 3).",
    ]
    t = plan.throughput
    if t is None or plan.wall_time_s is None:
        lines.append(
            f"Wall time: no throughput measured for {plan.device} yet (a real run on it saves one)."
        )
    else:
        lines.append(
            f"Wall time: about {_seconds(plan.wall_time_s)} at {t.passes_per_s:.0f} passes/s, "
            f"measured by {t.model} x {t.suite} on {t.created_utc}."
        )
        if t.model != plan.model:  # another model's passes may cost 1,000 times more or less
            lines.append(
                f"Note: that figure is another model's, a rough guide only; a short run of "
                f"{plan.model} on this device (e.g. --limit 64) saves its own."
            )
    lines += [f"Note: {note}" for note in plan.notes]
    return "\n".join(lines)
