"""Forward-pass time and peak memory of an Elliptical model vs its baseline, same weights.

Run from the repository root:

    .venv/bin/python benchmarks/bench_elliptical.py            # writes reports/benchmarks.md
    .venv/bin/python benchmarks/bench_elliptical.py --rounds 5 --output /tmp/bench.md
    .venv/bin/python benchmarks/bench_elliptical.py --family fan   # FAN-tiny, its own section

`--family deit` (default) compares DeiT-tiny arms and writes the head of the output file;
`--family fan` compares `fan_tiny_12_p16_224` with `fan_tiny_elliptical_12_p16_224` (the paper's
Table 4 pair) and replaces only its marked section of the output file.

DeiT arms (all in one process, one set of weights; FAN has the first two only):

- `deit`: timm's `deit_tiny_patch16_224` (fused scaled_dot_product_attention).
- `elliptical`: robench's `deit_tiny_elliptical_patch16_224` (M folded into Q, fused kernel).
- `naive`: the paper's Algorithm 1 taken literally (M = diag_embed(m), Q @ M @ K^T, explicit
  softmax, the previous V kept as a view of its qkv tensor), to show what the fused path saves.

Time: eval mode under `torch.inference_mode()`, after warm-up; each round runs every arm once in
a rotated order (ABC, BCA, CAB, ...), so slow drifts of a shared machine hit all arms alike. We
report the median time per arm and the median over rounds of the per-round ratio to `deit`.

Memory: on CPU, `torch.profiler.profile(profile_memory=True)` records every allocation and free
of one forward pass; the peak of their running sum is the activation peak (bytes allocated by
the forward above what existed before it). "Total peak" adds the parameters and the input, the
quantity `torch.cuda.max_memory_allocated` reports on a GPU. On CUDA we use exactly that.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import timm
import torch
from report_sections import cpu_name, load_average, write_section
from timm.models.vision_transformer import VisionTransformer
from torch import Tensor, nn
from torch.profiler import ProfilerActivity, profile

import robench.models.zoo  # noqa: F401  (registers deit_tiny_elliptical_patch16_224)
from robench.models.layers import EllipticalAttention, configure_elliptical

TIME_TARGET = 1.02  # elliptical / baseline, CPU
MEMORY_TARGET = 1.01
MEMORY_MODES = ("inference", "total", "autograd")


@dataclass(frozen=True)
class Family:
    """A baseline/Elliptical pair of timm model names with the same state dict."""

    baseline_arm: str
    baseline: str
    elliptical: str
    title: str
    source: str  # who defines the baseline


FAMILIES = {
    "deit": Family(
        "deit",
        "deit_tiny_patch16_224",
        "deit_tiny_elliptical_patch16_224",
        "DeiT-tiny, 224x224",
        "timm",
    ),
    "fan": Family(
        "fan",
        "fan_tiny_12_p16_224",
        "fan_tiny_elliptical_12_p16_224",
        "FAN-tiny, 224x224",
        "robench, NVlabs' definition",
    ),
}
FAN_MARKERS = ("<!-- bench_elliptical_fan -->", "<!-- /bench_elliptical_fan -->")


NOTES = """## Reading the numbers

- The ratio to judge is the median of per-round ratios: each round times every arm once, back
  to back, so load from other processes mostly cancels. "min ms" is the timeit-style lower
  bound (other processes only ever add time). On a shared machine with more runnable threads
  than cores, two-thread runs mostly measure OpenMP threads waiting for each other: every
  parallel element-wise pass the elliptical layer adds (subtract, abs, sum, copy, scale Q; five
  per layer) can stall for a scheduler time slice. Compare the one-thread rows for the cost of
  the work itself.
- What the fused layer adds per layer l >= 2, at batch B: one read of the carried V_{l-1}
  (a (B, H, N, D) tensor that the MLP of block l-1 has evicted from cache), the |V_l - V_{l-1}|
  reduction over positions, one copy of V_l into the same buffer, and Q *= m in place; no
  N x N work and no allocation after the first layer.
- Inference memory: V_{l-1} must stay alive through the MLP of block l-1, where a ViT's
  inference peak is, so the activation peak grows by one (B, N, C) tensor, about 1/12 of a
  DeiT block's peak (fc1 and GELU outputs are 4 C wide each). No exact implementation of Eq. 10
  can avoid keeping V_{l-1}; only storing it in lower precision would shrink it. With autograd
  recording (training, or attacks that take input gradients) the carried V shares storage with
  the tensors autograd already keeps and Q is scaled in place, so the overhead is ~0.
- The naive arm keeps a view of the whole qkv tensor (3x larger) and builds the N x N logits
  with diag_embed and an explicit softmax, as the paper's Algorithm 1 does.
"""

FAN_NOTES = """Reading: FAN's token mixing has its own `q` and `kv` projections, so the
carried V_{l-1} is a slice of the `kv` output; the elliptical layer adds the same few element-wise
passes per layer l >= 2 as in DeiT (|V_l - V_{l-1}| summed over positions, max-scaling,
Q *= m, one copy of V_l). A FAN block also runs the channel-attention MLP with two depthwise
convolutions, so attention is a smaller share of a block's time than in DeiT; the "Reading the
numbers" notes of the DeiT benchmark at the top of this file apply."""


class NaiveEllipticalAttention(EllipticalAttention):
    """Algorithm 1 of the paper as written: diag_embed(m) and an explicit softmax."""

    def forward(
        self, x: Tensor, attn_mask: Tensor | None = None, is_causal: bool = False
    ) -> Tensor:
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)  # (B, H, N, D)
        carry = self._carry()
        if not self.is_first:
            v_prev, _ = carry.take()
            assert v_prev is not None
            with torch.no_grad():
                m = torch.linalg.vector_norm((v - v_prev) / self.delta, ord=1, dim=2) / N
                m = m / m.amax(dim=-1, keepdim=True)  # (B, H, D)
            q = q @ torch.diag_embed(m)  # (B, H, N, D) @ (B, H, D, D)
        carry.put(None if self.is_last else v)
        attn = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)  # (B, H, N, N)
        return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))


@dataclass
class Arm:
    name: str
    model: nn.Module
    times: dict[tuple[int, int], list[float]] = field(default_factory=dict)  # (threads, batch)
    memory: dict[tuple[str, int], int] = field(default_factory=dict)  # (mode, batch) -> bytes


def build_arms(device: torch.device, naive: bool, family: Family) -> list[Arm]:
    torch.manual_seed(0)
    baseline = timm.create_model(family.baseline).eval()
    state = baseline.state_dict()
    elliptical = timm.create_model(family.elliptical).eval()
    elliptical.load_state_dict(state, strict=True)
    arms = [Arm(family.baseline_arm, baseline), Arm("elliptical", elliptical)]
    if naive and family.baseline_arm == "deit":
        model = VisionTransformer(
            patch_size=16, embed_dim=192, depth=12, num_heads=3, attn_layer=NaiveEllipticalAttention
        ).eval()
        configure_elliptical(model)
        model.load_state_dict(state, strict=True)
        arms.append(Arm("naive", model))
    for arm in arms:
        arm.model.to(device)
    return arms


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_forward(model: nn.Module, x: Tensor) -> float:
    _sync(x.device)
    start = time.perf_counter()
    with torch.inference_mode():
        model(x)
    _sync(x.device)
    return time.perf_counter() - start


def _forward_context(mode: str) -> contextlib.AbstractContextManager[object]:
    """ "inference": torch.inference_mode(); "autograd": grad recording (training-style)."""
    return torch.inference_mode() if mode == "inference" else torch.enable_grad()


def cpu_activation_peak(model: nn.Module, x: Tensor, mode: str) -> int:
    """Peak of the running sum of the profiler's CPU allocation events during one forward."""
    activities = [ProfilerActivity.CPU]
    with profile(activities=activities, profile_memory=True) as prof, _forward_context(mode):
        out = model(x)
        del out
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    running = peak = 0
    for event in sorted(events, key=lambda e: e.start_ns()):
        if event.device_type() == torch.autograd.DeviceType.CPU:
            running += event.nbytes()
            peak = max(peak, running)
    return peak


def cuda_activation_peak(model: nn.Module, x: Tensor, mode: str) -> int:
    """torch.cuda.max_memory_allocated during one forward, minus what was allocated before."""
    torch.cuda.synchronize(x.device)
    before = torch.cuda.memory_allocated(x.device)
    torch.cuda.reset_peak_memory_stats(x.device)
    with _forward_context(mode):
        out = model(x)
        del out
    torch.cuda.synchronize(x.device)
    return torch.cuda.max_memory_allocated(x.device) - before


def max_naive_difference(arms: list[Arm], x: Tensor) -> float:
    """Largest |elliptical - naive| logit difference (the two implement one formula)."""
    with torch.inference_mode():
        outs = {arm.name: arm.model(x) for arm in arms}
    return float((outs["elliptical"] - outs["naive"]).abs().max()) if "naive" in outs else 0.0


def measure(
    device: torch.device, arms: list[Arm], batch: int, threads: list[int], args: argparse.Namespace
) -> None:
    x = torch.rand(batch, 3, 224, 224, device=device)
    peak_fn: Callable[[nn.Module, Tensor, str], int] = (
        cuda_activation_peak if device.type == "cuda" else cpu_activation_peak
    )
    for arm in arms:
        for _ in range(args.warmup):
            time_forward(arm.model, x)
        for mode in ("inference", "autograd"):
            arm.memory[mode, batch] = int(
                statistics.median(peak_fn(arm.model, x, mode) for _ in range(3))
            )
        static = x.numel() * x.element_size()
        static += sum(p.numel() * p.element_size() for p in arm.model.parameters())
        arm.memory["total", batch] = arm.memory["inference", batch] + static
    for n in threads:
        torch.set_num_threads(n)
        for arm in arms:
            time_forward(arm.model, x)  # warm up at this thread count
            arm.times[n, batch] = []
        for r in range(args.rounds):
            shift = r % len(arms)
            for arm in arms[shift:] + arms[:shift]:  # rotated interleaving: ABC, BCA, CAB, ...
                arm.times[n, batch].append(time_forward(arm.model, x))


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f}"


def _paired(arm: Arm, base: Arm, key: tuple[int, int]) -> float:
    return statistics.median(t / b for t, b in zip(arm.times[key], base.times[key], strict=True))


def _verdict(ratio: float, target: float) -> str:
    return "meets" if ratio <= target else "misses"


def tables(device: torch.device, arms: list[Arm], batches: list[int], threads: list[int]) -> str:
    base = arms[0]
    lines = [f"### {device.type.upper()}: forward time", ""]
    lines += [
        "| threads | batch | arm | median ms | ratio (median of per-round ratios) "
        "| min ms | ratio of minima |"
    ]
    lines += ["|---:|---:|---|---:|---:|---:|---:|"]
    for n in threads:
        for batch in batches:
            for arm in arms:
                med = statistics.median(arm.times[n, batch])
                ratio = _paired(arm, base, (n, batch))
                fastest, base_fastest = min(arm.times[n, batch]), min(base.times[n, batch])
                lines.append(
                    f"| {n} | {batch} | {arm.name} | {med * 1e3:.1f} | {ratio:.3f} "
                    f"| {fastest * 1e3:.1f} | {fastest / base_fastest:.3f} |"
                )
    lines += ["", f"### {device.type.upper()}: peak memory of one forward", ""]
    lines += [
        "| batch | arm | activation peak MiB (inference) | ratio | total peak MiB | ratio "
        "| activation peak MiB (autograd) | ratio |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for batch in batches:
        for arm in arms:
            cells = [f"| {batch} | {arm.name}"]
            for mode in MEMORY_MODES:
                value = arm.memory[mode, batch]
                cells.append(f"{_mib(value)} | {value / base.memory[mode, batch]:.3f}")
            lines.append(" | ".join(cells) + " |")
    if device.type == "cpu":
        ell = next(a for a in arms if a.name == "elliptical")
        lines += [
            "",
            f"Targets on CPU, elliptical / {base.name}: time <= 1.02, memory <= 1.01.",
            "",
        ]
        for batch in batches:
            times = ", ".join(
                f"{_paired(ell, base, (n, batch)):.3f} at {n} thread(s) "
                f"({_verdict(_paired(ell, base, (n, batch)), TIME_TARGET)})"
                for n in threads
            )
            mem = {m: ell.memory[m, batch] / base.memory[m, batch] for m in MEMORY_MODES}
            lines.append(
                f"- batch {batch}: time {times}; memory: total peak {mem['total']:.3f} "
                f"({_verdict(mem['total'], MEMORY_TARGET)}), inference activation peak "
                f"{mem['inference']:.3f} ({_verdict(mem['inference'], MEMORY_TARGET)}), "
                f"autograd activation peak {mem['autograd']:.3f} "
                f"({_verdict(mem['autograd'], MEMORY_TARGET)})"
            )
    return "\n".join(lines)


def machine() -> str:
    cpu = cpu_name()
    return (
        f"{cpu}; nproc {os.cpu_count()}; torch {torch.__version__}; timm {timm.__version__}; "
        f"Python {platform.python_version()}"
    )


def header(family: Family, args: argparse.Namespace, started: datetime.datetime, load: str) -> str:
    """The run's record: date, machine, load, command, models and method."""
    base = family.baseline_arm
    naive = " --no-naive" if args.no_naive and base == "deit" else ""
    models = (
        f"- models: `{family.baseline}` ({family.source}) vs `{family.elliptical}` (robench), "
        "same random weights"
    )
    if base == "deit":
        models += "; `naive` = paper Algorithm 1 (diag_embed + explicit softmax)"
    else:
        models += " (Elliptical Attention in token-mixing layers 2-12; class attention standard)"
    return "\n".join(
        [
            f"- date: {started:%Y-%m-%d %H:%M} UTC",
            f"- machine: {machine()}",
            f"- load average (1, 5, 15 min) before: {load}; after: {load_average()}",
            f"- command: `python benchmarks/bench_elliptical.py --family {args.family} "
            f"--rounds {args.rounds} --warmup {args.warmup} --batch-sizes "
            f"{' '.join(map(str, args.batch_sizes))} --threads "
            f"{' '.join(map(str, args.threads))}{naive}`",
            models,
            "- time: eval, `torch.inference_mode()`, one process, arms interleaved in rotated "
            f"order for {args.rounds} rounds after {args.warmup} warm-up passes; median "
            f"milliseconds and the median over rounds of the per-round ratio to `{base}`",
            "- memory (CPU): peak of the running sum of allocation/free events recorded by "
            "`torch.profiler.profile(profile_memory=True)` during one forward = activation peak "
            "(inference: under `torch.inference_mode()`; autograd: grad recording on, as in "
            "training, where the activations kept for backward dominate); total peak = "
            "inference activation peak + parameters + input, what `torch.cuda.max_memory_allocated`"
            " measures on a GPU; on CUDA the activation peak is `max_memory_allocated` minus what "
            "was allocated before the forward",
            f"- targets (CPU, elliptical / {base}): time <= 1.02, memory <= 1.01",
        ]
    )


def write_report(path: Path, family: Family, text: str) -> None:
    """DeiT: the head of the file, up to the first marked section of another benchmark;
    FAN: its own marked section. Every other section is left as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if family.baseline_arm == "fan":
        write_section(path, "\n".join([FAN_MARKERS[0], text, FAN_MARKERS[1]]), *FAN_MARKERS)
        return
    old = path.read_text() if path.exists() else ""
    rest = old[old.index("\n<!-- ") :] if "\n<!-- " in old else ""
    path.write_text(text + "\n" + rest)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", choices=sorted(FAMILIES), default="deit")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--threads", type=int, nargs="+", default=[torch.get_num_threads()])
    parser.add_argument("--rounds", type=int, default=30, help="interleaved rounds per setting")
    parser.add_argument("--warmup", type=int, default=3, help="untimed forwards per arm")
    parser.add_argument("--no-naive", action="store_true", help="skip the diag_embed arm")
    parser.add_argument("--output", type=Path, default=Path("reports/benchmarks.md"))
    args = parser.parse_args(argv)
    family = FAMILIES[args.family]

    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    started, load_before = datetime.datetime.now(datetime.timezone.utc), load_average()
    sections = []
    for device in devices:
        threads = args.threads if device.type == "cpu" else [torch.get_num_threads()]
        arms = build_arms(device, naive=not args.no_naive, family=family)
        diff = max_naive_difference(arms, torch.rand(2, 3, 224, 224, device=device))
        for batch in args.batch_sizes:
            measure(device, arms, batch, threads, args)
        sections += [tables(device, arms, args.batch_sizes, threads), ""]
        if len(arms) > 2:
            sections += [f"max |elliptical - naive| logit difference: {diff:.2e}", ""]
    level = "#" if family.baseline_arm == "deit" else "##"
    script = "benchmarks/bench_elliptical.py" + (" --family fan" if level == "##" else "")
    report = "\n".join(
        [
            f"{level} Benchmark: Elliptical Attention overhead ({family.title}) ({script})",
            "",
            header(family, args, started, load_before),
            "",
            *sections,
            NOTES if family.baseline_arm == "deit" else FAN_NOTES,
        ]
    )
    print(report)
    write_report(args.output, family, report)


if __name__ == "__main__":
    main()
