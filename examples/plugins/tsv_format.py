"""An output format from a plugin: `robench compare --format tsv`, tab-separated values.

One row per report, one column per perturbation and metric, values in display units (percent
for accuracies), with their 95% intervals under `--ci`: a sheet that spreadsheets and `cut`
read as they are. The same plugin gives `robench eval` a TSV of one report's metrics and
`robench gate` a TSV of its checks.

    robench compare a.json b.json --import examples/plugins/tsv_format.py --format tsv
    robench compare a.json b.json --import examples/plugins/tsv_format.py -o table.tsv
    robench eval vit_nano_fmnist --limit 64 --import examples/plugins/tsv_format.py --format tsv
    robench gate -b a.json -c b.json --import examples/plugins/tsv_format.py --output tsv=gate.tsv
"""

from __future__ import annotations

from robench.registry import register_format


@register_format("compare", "tsv", ".tsv")
def tsv_comparison(cmp, ci: bool) -> str:  # type: ignore[no-untyped-def]
    """`cmp` is a `robench.results.compare.comparison.Comparison`; `ci` adds the intervals."""
    header = ["model"]
    for column in cmp.columns:
        header.append(column.id)
        if ci:
            header += [f"{column.id} ci_low", f"{column.id} ci_high"]
    lines = ["\t".join(header)]
    for row in cmp.rows:
        cells = [row]
        for column in cmp.columns:
            cell = cmp.cell(row, column)
            cells.append(f"{cell.value:.2f}")
            if ci:
                cells += [f"{cell.ci95[0]:.2f}", f"{cell.ci95[1]:.2f}"]
        lines.append("\t".join(cells))
    return "\n".join(lines)


@register_format("report", "tsv")
def tsv_report(report) -> str:  # type: ignore[no-untyped-def]
    """`robench eval --import ... --format tsv`: one report's metrics as tab-separated rows
    (result, metric, value in stored units, 95% interval); `report` is a robench `Report`."""
    lines = ["result\tmetric\tvalue\tci_low\tci_high"]
    for result in report.results:
        for name, metric in result.metrics.items():
            low, high = metric.ci95 or (metric.value, metric.value)
            lines.append(f"{result.name}\t{name}\t{metric.value:.4f}\t{low:.4f}\t{high:.4f}")
    return "\n".join(lines)


@register_format("gate", "tsv", ".tsv")
def tsv_gate(result, strict: bool) -> str:  # type: ignore[no-untyped-def]
    """`robench gate --import ... --output tsv=gate.tsv`: one row per check (values and drops
    in stored units, fractions for accuracies; empty cells where the policy ignores a check or
    no paired test ran); `result` is a robench `GateResult`. `strict` is taken as every gate
    format takes it; the verdicts shown do not depend on it."""
    lines = ["check\tbaseline\tcandidate\tdrop\tallowed\ttest\tp\tadjusted_p\tstatus"]
    for check in result.checks:
        test = check.test
        cells = [
            check.name,
            f"{check.baseline:.4f}",
            f"{check.candidate:.4f}",
            f"{check.drop:.4f}",
            "" if check.allowed is None else f"{check.allowed:.4f}",
            "" if test is None else test.name,
            "" if test is None else f"{test.p_value:.3g}",
            "" if test is None or test.adjusted_p is None else f"{test.adjusted_p:.3g}",
            check.status.value,
        ]
        lines.append("\t".join(cells))
    return "\n".join(lines) + "\n"
