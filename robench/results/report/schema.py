"""The versioned report schema and atomic JSON writes.

A report is everything needed to trust and reproduce one evaluation: versions, seed, suite
hash, checkpoint hash, the exact sample set, per-perturbation metrics with 95% intervals and
the per-sample predictions that `robench gate` pairs across runs. `robench schema` prints the
JSON Schema; docs/report.schema.json is the committed copy.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from robench._core.errors import ConfigError, as_input_errors
from robench._core.file_modes import give_default_mode
from robench._core.overwrite_guard import nearest_existing
from robench.results.report.report_v1 import upgrade_v1

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 5
READABLE_SCHEMA_VERSIONS = (1, 2, 3, 4, 5)  # version 1 reports are upgraded on read

DEFAULT_DATASET = "default"  # the name of a request's dataset when it names none


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MetricValue(_Strict):
    value: float  # fraction in [0, 1] for accuracies; perplexity, bits per byte as is
    # 95% confidence interval (Wilson for accuracies, bootstrap over windows for perplexity)
    ci95: tuple[float, float]
    higher_is_better: bool  # direction, used by tables and gates


class ResultCost(_Strict):
    """The model passes a result spent, counted at the model by hooks (never estimated):
    robench/models/pass_counter.py. A pass is one sample through the model (a batch of 64 is
    64); the runner's re-run of the model to score the perturbed inputs is included and
    counted apart in `scoring_forward`. A transfer attack's passes on its surrogate count too."""

    forward: int  # forward passes, in samples, the scoring re-run included
    backward: int  # backward passes through the model, in samples
    scoring_forward: int  # of `forward`: the runner's re-run to score (one per sample here)
    samples: int  # samples run in this process (parts resumed from an earlier run: not counted)
    forward_per_sample: float  # forward / samples
    backward_per_sample: float  # backward / samples
    passes_per_sample: float  # (forward + backward) / samples: compare's cost column
    # Text attacks: the queries the attack reports making (its own count, summed over the
    # result's samples), and per sample; None for attacks that do not report queries.
    queries: int | None = None
    queries_per_sample: float | None = None


class PerturbationResult(_Strict):
    name: str  # unique label within the suite
    kind: str  # registered perturbation kind
    params: dict[str, Any]  # validated parameters, pixel units, with display forms
    dataset: str = DEFAULT_DATASET  # key of `Report.datasets` this result was measured on
    n_samples: int  # samples this perturbation was evaluated on
    metrics: dict[str, MetricValue]  # metric name -> value
    wall_time_s: float  # time spent on this perturbation (0 for resumed parts)
    # The model passes it spent, counted (schema 5); None in older reports: cost unknown.
    cost: ResultCost | None = None


class Environment(_Strict):
    python: str
    platform: str
    torch: str
    timm: str
    torchattacks: str | None  # None when not installed
    pyautoattack: str | None
    device: str  # e.g. "cpu (AMD EPYC 7763 64-Core Processor)", "cuda:0 (NVIDIA H100)"
    num_threads: int  # torch intra-op threads
    git_sha: str | None  # of the working directory's repository, when there is one
    # How reproducible the numbers are: torch's determinism flags, how robench seeds, and
    # where a library is not deterministic on GPU (absent in reports before 0.1.0's schema 4).
    determinism: dict[str, Any] = Field(default_factory=dict)
    # The arithmetic of the run (SpeedOptions.precision; docs/formats.md); None: not recorded.
    precision: str | None = None


class ModelInfo(_Strict):
    name: str  # what the user asked for (model card or registered model)
    architecture: str  # registered timm model name
    model_kwargs: dict[str, Any]
    card: str | None  # model card file, when one was used
    checkpoint: str | None  # path as given
    checkpoint_sha256: str | None  # or a model source's single weight file's (see `source`)
    checkpoint_layout: str | None  # where the weights were found in the file
    n_parameters: int
    normalization: dict[str, list[float]]  # {"mean": [...], "std": [...]}, inside the model
    preprocessing: dict[str, Any]  # input_size, interpolation, crop_pct
    config_sources: dict[str, str]  # which source gave each preprocessing field
    task: str = "image-classification"  # the task the model solves
    # Where a model source read the weights (its keys: docs/formats.md, `model`); None for a
    # --checkpoint or a model card.
    source: dict[str, Any] | None = None
    # What the model's modules report about themselves through robench's report hook, by
    # section: e.g. "elliptical" -> Elliptical Attention options (robench/_core/model_hooks.py).
    extensions: dict[str, dict[str, Any]] = Field(default_factory=dict)
    randomized: bool  # two forward passes on the same input differ


class SuiteInfo(_Strict):
    name: str
    version: int
    sha256: str  # of the suite file's bytes, or of its resolved content when it has an include
    path: str
    description: str


class LabelSpaceInfo(_Strict):
    name: str  # "imagenet-a", "imagenet-r" or the wnid list file's name
    classes: int  # number of listed classes
    sha256: str  # of the listed wnids joined by newlines (comments do not count)
    source: str  # "shipped" or the list file's path
    protocol: str  # one sentence: how predictions are restricted to the listed classes


class SkippedSample(_Strict):
    """A sample of the data that could not be read (`--bad-images skip`)."""

    index: int  # the sample's index in the dataset
    reason: str  # the reader's sentence, naming the file


class DataInfo(_Strict):
    path: str
    kind: str  # "idx" or "image-folder"
    split: str | None
    n_total: int  # samples in the dataset
    n_samples: int  # samples evaluated (after --limit)
    limit: int | None
    indices_sha256: str  # hash of the sorted sample indices
    classes: int
    class_index_note: str  # how class indices were assigned
    subset: str | None = None  # the listed subset evaluated (--subset), before --limit
    # The classes scored, when the label space is restricted (ImageNet-A/R, `classes`): the
    # model's logits are cut to these classes and the argmax is taken among them.
    label_space: LabelSpaceInfo | None = None
    # How images reach the model when it differs from resize + centre crop (ImageNet-C);
    # for a text corpus, how it was cut into evaluation windows.
    preprocessing_note: str | None = None
    # A text corpus's summary (language modelling; its keys: docs/formats.md, `datasets`).
    corpus: dict[str, Any] | None = None
    # Samples left out because they cannot be read (`--bad-images skip`), and why; they are
    # not in `n_samples` and no perturbation saw them.
    skipped: list[SkippedSample] = Field(default_factory=list)


class MissingResult(_Strict):
    """A suite entry that could not be evaluated here, and why (e.g. a corruption absent
    from a pre-rendered ImageNet-C folder, or a dataset the suite declares but was not given)."""

    name: str
    kind: str
    params: dict[str, Any]
    dataset: str
    reason: str  # one sentence


class AggregateResult(_Strict):
    """A number computed over a group of results (mCE over the corruptions of a suite)."""

    name: str  # unique label within the report (the aggregate's registered name)
    kind: str  # registered aggregate (results/stats/aggregates.py)
    dataset: str  # the dataset its member results were measured on
    members: list[str]  # result names it is computed from
    value: float | None  # None when it cannot be computed here (`reason` says why)
    ci95: tuple[float, float] | None  # paired bootstrap over samples
    higher_is_better: bool
    reason: str | None = None  # why `value` is None, or a caveat
    details: dict[str, float] = Field(default_factory=dict)  # e.g. per-corruption CE


class SampleResults(_Strict):
    """Per-sample outcomes on one dataset, aligned with `indices`; what paired statistics use.

    A result evaluated on the first n samples only (`max_samples`) has lists of length n.
    """

    indices: list[int]  # dataset indices, sorted
    targets: list[Any]  # what each sample is scored against (class index for images)
    # result name -> column -> one value per sample. Columns: the task's outputs (e.g.
    # "prediction", the top-1 class) and the per-sample value of every metric (e.g. "top1").
    values: dict[str, dict[str, list[Any]]]


class DiagnosticResult(_Strict):
    """A perturbation-free measurement: collapse, head redundancy, efficiency, attention maps."""

    name: str
    kind: str
    params: dict[str, Any]
    n_samples: int  # images the diagnostic ran on
    values: dict[str, Any]  # numbers and per-layer lists; units in the key names
    files: list[str]  # figures written (paths relative to the report's folder)


class SanityResult(_Strict):
    """One check of the sanity battery (`robench eval --sanity`) or of the always-on checks."""

    name: str  # e.g. "pgd_at_least_fgsm"
    status: Literal["pass", "warn"]
    detail: str  # one sentence with the numbers
    values: dict[str, float]  # the accuracies (fractions) or shares behind the verdict

    @classmethod
    def verdict(
        cls, name: str, ok: bool, detail: str, if_warn: str, values: dict[str, float], end: str = ""
    ) -> SanityResult:
        """A pass, or a warning with `if_warn` (what it means, what to do) after `detail`."""
        text = detail if ok or not if_warn else f"{detail}: {if_warn}"
        return cls(name=name, status="pass" if ok else "warn", detail=text + end, values=values)


class SpeedInfo(_Strict):
    """The speed modes of a run (`robench eval --amp/--channels-last/--compile`) and the
    batch size the model actually ran on (robench/evaluation/speed.py)."""

    # --amp ("bf16", "fp16"): autocast dtype of clean and corruption scoring; None: float32.
    amp: str | None
    channels_last: bool  # NHWC weights and image batches
    compile: bool  # torch.compile for every pass of the run
    # Attacks and the scoring of their outputs ran in `amp` too (the suite's amp_attacks);
    # False: they ran in float32.
    amp_attacks: bool = False
    # The largest batch the model ran on at the end: the batch size, unless the GPU ran out
    # of memory and batches were split (under torchrun, the smallest any process ran on).
    batch_size_used: int
    batch_size_note: str | None = None  # where batches were first split, when they were


def scoring_precision_of(report: Report) -> str:
    """The arithmetic a report computed in (`Environment.precision`): "fp32", "tf32",
    "bf16 autocast, attacks fp32" (clean and corruption inputs under --amp) or "bf16 autocast"
    (the suite's amp_attacks too); reports from before robench recorded it are read from
    their speed modes (float32 matmul then)."""
    if report.environment.precision is not None:
        return report.environment.precision
    speed = report.speed
    if speed is None or speed.amp is None:
        return "fp32"
    return f"{speed.amp} autocast" + ("" if speed.amp_attacks else ", attacks fp32")


def _differ_note(found: list[str], names: list[str], text: str) -> str | None:
    """`text` with `{shown}` as "NAME VALUE, ..." when the reports' `found` values differ."""
    if len(set(found)) < 2:
        return None
    return text.format(shown=", ".join(f"{n} {v}" for n, v in zip(names, found, strict=True)))


def precision_note(reports: list[Report], names: list[str]) -> str | None:
    """A sentence when reports computed in different precisions."""
    return _differ_note(
        [scoring_precision_of(r) for r in reports],
        names,
        "the reports computed in different precisions ({shown}; --amp, --tf32 and the "
        "suite's amp_attacks), so their differences include the precision's.",
    )


def device_type_note(reports: list[Report], names: list[str]) -> str | None:
    """A sentence when reports ran on different kinds of device (CPU, CUDA, ...)."""
    return _differ_note(
        [r.environment.device.split(" ", 1)[0].split(":", 1)[0] for r in reports],
        names,
        "the reports ran on different devices ({shown}): CPU and GPU draw different random "
        "numbers and round differently, so randomized attacks and certificates agree in "
        "distribution only and samples near a decision boundary may differ.",
    )


class SanityBudgetInfo(_Strict):
    """What the sanity battery was allowed to spend (`--sanity-budget`) and what it cost.

    Costs are model passes over one sample each (a forward 1, a forward and backward 3),
    estimated from the budget, never measured: docs/sanity.md.
    """

    mode: Literal["auto", "full", "quick"]  # auto: fitted under cap_passes
    samples: int  # samples every check ran on (the first of the default dataset's)
    pgd_steps: int  # PGD steps of the eps sweep (and of the EOT and adaptive runs)
    unbounded_steps: int  # PGD steps of the unbounded attack
    spsa_steps: int  # SPSA iterations
    spsa_directions: int  # SPSA directions per gradient estimate (2 queries each)
    eot_iterations: int  # EOT samples per gradient of AutoAttack rand (randomized models)
    # Checks that did not run, each with the reason (the cap, or a threat model without it).
    left_out: dict[str, str] = Field(default_factory=dict)
    battery_passes: int  # estimated passes of the battery (an upper bound)
    suite_passes: int  # estimated passes of the suite's results
    cap_passes: int | None = None  # auto: 3 x suite_passes; None for full and quick
    wall_time_s: float  # the battery's wall time


class SequentialInfo(_Strict):
    """A sequential run (`eval --target-halfwidth`, `gate --sequential`): samples in a seeded
    random order, stopped after `n_stopped` of them (docs/sequential.md). The 95% intervals of
    `metrics` are the confidence sequence's at the stopping time, valid although the stopping
    depended on the data; the other metrics keep their usual intervals."""

    stopping: Literal["target half-width", "gate verdict"]  # the rule that could stop it
    target_halfwidth: float | None = None  # H: stop once every interval is at most +-H
    n_stopped: int  # samples evaluated per result (a multiple of check_every, or all)
    n_available: int  # samples the run could have evaluated (the chosen ones)
    reached: bool  # the rule was met (false: the data ran out first)
    method: str  # the confidence sequence (paper) giving the intervals
    alpha: float  # 1 - its coverage
    check_every: int  # samples per chunk: the rule was checked after each
    order: str  # how the evaluation order is drawn from the run's seed
    metrics: list[str]  # metrics whose intervals are the confidence sequence's
    skipped_metrics: list[str] = Field(default_factory=list)  # not bounded means (perplexity)


class Report(_Strict):
    schema_version: int = Field(default=SCHEMA_VERSION)
    robench_version: str
    created_utc: str  # ISO 8601
    command: list[str]  # argv that produced the report
    task: str = "image-classification"  # registered task (`robench list tasks`)
    environment: Environment
    model: ModelInfo
    suite: SuiteInfo
    datasets: dict[str, DataInfo]  # name -> dataset; the first is the default one
    seed: int
    batch_size: int
    # Speed modes and the batch size used (absent in reports written before they existed).
    speed: SpeedInfo | None = None
    results: list[PerturbationResult]
    warnings: list[str]  # things that make a number less trustworthy
    samples: dict[str, SampleResults]  # dataset name -> per-sample outcomes
    diagnostics: list[DiagnosticResult] = Field(default_factory=list)  # from [[diagnostics]]
    sanity: list[SanityResult] = Field(default_factory=list)  # empty unless --sanity
    # The budget the battery ran with and its cost; None without the battery.
    sanity_budget: SanityBudgetInfo | None = None
    # Always-on consistency checks of the results (e.g. PGD at least as strong as FGSM at the
    # same eps); older reports have none.
    checks: list[SanityResult] = Field(default_factory=list)
    # Numbers over groups of results (suite `aggregates`: mCE, mean corruption accuracy...).
    aggregates: list[AggregateResult] = Field(default_factory=list)
    # Suite entries not evaluated, each with the reason (listed, never silently dropped).
    missing: list[MissingResult] = Field(default_factory=list)
    # A sequential run's stopping point and confidence sequence; None for a fixed-n run.
    sequential: SequentialInfo | None = None
    wall_time_s: float

    @property
    def data(self) -> DataInfo:
        """The default (first) dataset: the only one of a single-dataset evaluation."""
        return next(iter(self.datasets.values()))

    def aggregate(self, name: str) -> AggregateResult | None:
        return next((a for a in self.aggregates if a.name == name), None)

    def result(self, name: str) -> PerturbationResult | None:
        return next((r for r in self.results if r.name == name), None)

    def sample_values(self, result: str, column: str) -> list[Any] | None:
        """Per-sample `column` (a metric or task output) of `result`; None when not stored."""
        found = self.result(result)
        samples = self.samples.get(found.dataset) if found is not None else None
        if samples is None:
            return None
        return samples.values.get(result, {}).get(column)

    def to_pandas(self) -> pd.DataFrame:
        """A tidy frame: one row per (dataset, result, metric), then one per aggregate, values
        as stored (fractions for accuracies); docs/python-api.md documents every column."""
        from robench.results.report.tidy import report_frame

        return report_frame(self)

    @as_input_errors
    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the report as `robench eval --out` writes it (the same JSON, atomically);
        an existing file is replaced only with `overwrite=True`. Returns the path. A path
        robench cannot write (a folder that is not writable, or missing) is `InputError`."""
        if not isinstance(path, str | os.PathLike):
            raise ConfigError(
                f"Report.save takes the path of the JSON file to write, not a "
                f"{type(path).__name__}; pass e.g. report.save('runs/report.json')."
            )
        target = Path(path)
        if target.is_file() and not overwrite:  # a directory: write_report says so
            raise ConfigError(
                f"{target} already exists; pass overwrite=True to replace it, or another path."
            )
        try:
            write_report(self, target)
        except OSError as exc:
            raise ConfigError(
                f"cannot write the report to {target} ({exc.strerror or type(exc).__name__}); "
                "pass a path in a folder that exists and you can write to."
            ) from None
        return target

    def _repr_html_(self) -> str:
        """Jupyter's view: a small table of every result's metrics (escaped HTML)."""
        from robench.results.report.html_table import render_table
        from robench.results.report.tidy import report_rows

        title = (
            f"{self.model.name} ({self.task}), suite {self.suite.name} v{self.suite.version}, "
            f"{self.data.n_samples} samples, seed {self.seed}"
        )
        return render_table(title, report_rows(self))


def report_json_schema() -> dict[str, Any]:
    schema = Report.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"robench report, schema version {SCHEMA_VERSION}"
    return schema


def check_writable(path: Path, option: str = "--out", example: str = "report.json") -> None:
    """Refuse, before any work, an output path that is a directory or cannot be written."""
    if path.is_dir():
        raise ConfigError(
            f"{option} {path} is a directory; pass a file path such as {path / example}."
        )
    _check_in_writable_folder(path, path.parent, option, "pass a path in a directory")


def check_out_dir(path: Path, option: str = "--out-dir") -> None:
    """Refuse, before any work, an output folder that is a file, lies under one or cannot be
    written (creating it would fail only after the data is read or a model trained)."""
    _check_in_writable_folder(path, path, option, "pass a directory (it is created if missing)")


def _check_in_writable_folder(path: Path, folder: Path, option: str, fix: str) -> None:
    existing = nearest_existing(folder)
    if not existing.is_dir():
        raise ConfigError(f"{option} {path}: {existing} is a file, not a directory; {fix}.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(
            f"{option} {path}: directory {existing} is not writable (permission denied); pass "
            f"{option} in a directory you can write to."
        )


# OS errors that mean the output path is wrong, not that the machine failed.
_PATH_ERRORS = (PermissionError, IsADirectoryError, NotADirectoryError, FileExistsError)


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` next to `path` then rename, so readers never see a half-written file."""
    try:
        check_writable(path, "output")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except _PATH_ERRORS as exc:
        raise ConfigError(f"cannot write {path} ({exc.strerror}); pass another path.") from None
    try:
        give_default_mode(fd)  # mkstemp makes 0600
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, _PATH_ERRORS):
            raise ConfigError(f"cannot write {path} ({exc.strerror}); pass another path.") from None
        raise


def write_report(report: Report, path: Path) -> None:
    # pydantic's serializer: several times faster than the json module with indent, which
    # matters for reports with 50,000 per-sample rows.
    write_text_atomic(path, report.model_dump_json(indent=2) + "\n")


def load_json(path: Path, what: str, fix: str) -> Any:
    """The JSON in `path` (a `what`: "report"); missing, a directory, not UTF-8 or not JSON
    is one ConfigError sentence ending in `fix`."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist; check the path.") from None
    except IsADirectoryError:
        raise ConfigError(f"{what} {path} is a directory; pass a {what} .json file.") from None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{what} {path} is not readable JSON ({exc}); {fix}.") from None


def read_report(path: Path) -> Report:
    """Load and validate a report; a wrong or old file is one ConfigError sentence."""
    data = load_json(path, "report", "pass a report written by `robench eval`")
    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(version, int) and version > max(READABLE_SCHEMA_VERSIONS):
        raise ConfigError(
            f"report {path} has schema_version {version}, newer than this robench reads "
            f"({max(READABLE_SCHEMA_VERSIONS)}); upgrade robench (pip install -U robench)."
        )
    if version not in READABLE_SCHEMA_VERSIONS:
        readable = ", ".join(map(str, READABLE_SCHEMA_VERSIONS))
        raise ConfigError(
            f"report {path} has schema_version {version!r}, this robench reads {readable}; "
            "re-run `robench eval` with this version."
        )
    if version == 1:
        try:
            data = upgrade_v1(data)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(
                f"report {path} says schema_version 1 but lacks its fields ({exc!r})."
            ) from None
    # Later versions only add optional keys: an older report is read as the current one.
    data["schema_version"] = SCHEMA_VERSION
    try:
        return Report.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(
            f"report {path} does not match the schema at {where}: {first['msg']}."
        ) from None
