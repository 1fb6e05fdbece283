"""The subcommands of `robench`: name, module, function and the summary `robench --help` shows;
a table rather than imports, so that listing the commands imports none of them
(docs/architecture.md, "A command line that answers at once").
"""

from __future__ import annotations

from robench.cli._lazy import LazyCommand

# Command NAME -> its summary, in the order `robench --help` lists them; each command is the
# function NAME_command of the module robench.cli.NAME.
_SUMMARIES = {
    "eval": "Evaluate one checkpoint under a suite; write a JSON report, print a table.",
    "compare": "Compare reports side by side: best value bold, second best underlined.",
    "gate": "Gate a candidate report against a baseline with paired tests; exit 1 on a regression.",
    "sweep": "Run many models x suites x seeds as resumable eval jobs; one leaderboard per suite.",
    "list": "List registered models, perturbations, shipped suites, model cards, metrics or tasks.",
    "validate": "Validate suites and model cards (schema, perturbation parameters, checkpoint "
    "hashes).",
    "schema": "Print the JSON Schema of robench reports (docs/report.schema.json is a copy).",
    "train": "Train a registered image classifier, segmenter, language model, text or sequence "
    "classifier.",
    "generate": "Write a seeded synthetic LRA dataset (ListOps or Pathfinder) in its released "
    "layout.",
    "demo": "A tour on the shipped nano models: baseline vs Elliptical nano ViT under attacks and "
    "corruptions, figures and a page; --full adds language models, segmentation, text "
    "classification and certified robustness.",
}
COMMANDS = {
    name: LazyCommand(f"robench.cli.{name}", f"{name}_command", summary)
    for name, summary in _SUMMARIES.items()
}
