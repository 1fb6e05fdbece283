"""Run timm's own `train.py` with robench's models registered: timm's training script looks
models up in timm's registry, which `robench.models.zoo` fills on import, so it only needs
that import first (the command: README, "Elliptical Attention").
"""

from __future__ import annotations

import runpy
import sys

import robench.models.zoo  # noqa: F401  (registers DeiT-Elliptical and the nano ViTs with timm)


def main() -> None:
    if len(sys.argv) < 2 or not sys.argv[1].endswith(".py"):
        sys.stderr.write(
            "usage: python -m robench.training.timm_train PATH/TO/timm/train.py [ARGS...]\n"
        )
        raise SystemExit(2)
    script = sys.argv.pop(1)
    sys.argv[0] = script
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
