"""The subcommands of `robench`: name, module, function and the summary `robench --help` shows.

A table rather than imports, so that listing the commands imports none of them
(robench/cli/_lazy.py); `tests/test_cli.py` keeps each summary equal to the first paragraph of
its command's docstring.
"""

from __future__ import annotations

from robench.cli._lazy import LazyCommand

# In the order `robench --help` lists them.
COMMANDS = {
    "eval": LazyCommand(
        "robench.cli.eval",
        "eval_command",
        "Evaluate one checkpoint under a suite; write a JSON report, print a table.",
    ),
    "compare": LazyCommand(
        "robench.cli.compare",
        "compare_command",
        "Compare reports side by side: best value bold, second best underlined.",
    ),
    "gate": LazyCommand(
        "robench.cli.gate",
        "gate_command",
        "Gate a candidate report against a baseline with paired tests; exit 1 on a regression.",
    ),
    "sweep": LazyCommand(
        "robench.cli.sweep",
        "sweep_command",
        "Run many models x suites x seeds as resumable eval jobs; one leaderboard per suite.",
    ),
    "list": LazyCommand(
        "robench.cli.list",
        "list_command",
        "List registered models, perturbations, shipped suites, model cards, metrics or tasks.",
    ),
    "validate": LazyCommand(
        "robench.cli.validate",
        "validate_command",
        "Validate suites and model cards (schema, perturbation parameters, checkpoint hashes).",
    ),
    "schema": LazyCommand(
        "robench.cli.schema",
        "schema_command",
        "Print the JSON Schema of robench reports (docs/report.schema.json is a copy).",
    ),
    "train": LazyCommand(
        "robench.cli.train",
        "train_command",
        "Train a registered image classifier, segmenter, language model, text or sequence "
        "classifier.",
    ),
    "generate": LazyCommand(
        "robench.cli.generate",
        "generate_command",
        "Write a seeded synthetic LRA dataset (ListOps or Pathfinder) in its released layout.",
    ),
    "demo": LazyCommand(
        "robench.cli.demo",
        "demo_command",
        "A tour on the shipped nano models: baseline vs Elliptical nano ViT under attacks and "
        "corruptions, figures and a page; --full adds language models, segmentation, text "
        "classification and certified robustness.",
    ),
}
