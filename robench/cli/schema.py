"""`robench schema`: print the report's JSON Schema."""

from __future__ import annotations

import json

import typer

from robench.cli._output import handle_errors
from robench.results.report.schema import report_json_schema


@handle_errors
def schema_command() -> None:
    """Print the JSON Schema of robench reports (docs/report.schema.json is a copy).

    Examples:
      robench schema > report.schema.json
    """
    typer.echo(json.dumps(report_json_schema(), indent=2))
