"""Oracles for the LRA data, written independently of robench's generators and readers: a
ListOps parser and evaluator, a random expression writer in LRA's printed form, and a
Pathfinder connectivity check over the pixels."""

from __future__ import annotations

import random
import statistics
from collections import deque

import numpy as np
from scipy import ndimage

OPERATORS = {
    "[MAX": max,
    "[MIN": min,
    "[MED": lambda args: int(statistics.median(args)),  # LRA: int(np.median(...))
    "[SM": lambda args: sum(args) % 10,
}


def parse(source: str) -> tuple[int, int, int, list[tuple[str, int]]]:
    """(value, length, depth, [(operator, arity), ...]) of one printed expression; raises
    AssertionError when it is not one well-formed expression. Depth counts the root as 1 and a
    digit as one level below its operator."""
    tokens = [t for t in source.split() if t not in ("(", ")")]
    stack: list[tuple[str, list[int]]] = []
    done: list[int] = []
    operators: list[tuple[str, int]] = []
    depth = 0
    for token in tokens:
        if token in OPERATORS:
            stack.append((token, []))
            depth = max(depth, len(stack))
        elif token == "]":
            operator, args = stack.pop()
            operators.append((operator, len(args)))
            (stack[-1][1] if stack else done).append(OPERATORS[operator](args))
        else:
            assert token.isdigit() and len(token) == 1, token
            depth = max(depth, len(stack) + 1)
            (stack[-1][1] if stack else done).append(int(token))
    assert not stack and len(done) == 1, source[:80]
    return done[0], len(tokens), depth, operators


def random_expression(rng: random.Random, depth: int = 1) -> str:
    """A random ListOps expression printed as LRA prints it (nested binary pairs in
    parentheses), drawn with its own rules: at most 4 levels, 2..5 arguments."""
    if depth >= 4 or rng.random() < 0.4:
        return str(rng.randrange(10))
    operator = rng.choice(sorted(OPERATORS))
    arguments = [random_expression(rng, depth + 1) for _ in range(rng.randint(2, 5))]
    text = f"( {operator} {arguments[0]} )"
    for argument in arguments[1:]:
        text = f"( {text} {argument} )"
    return f"( {text} ] )"


BRIDGE = 2  # dashes of one path are 1 pixel apart: lit pixels within 2 (Chebyshev) connect


def connected(pixels: np.ndarray, a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether lit pixels link `a` to `b`, hopping over gaps of one pixel."""
    lit = pixels > 0
    seen = np.zeros_like(lit)
    queue = deque([a])
    seen[a] = True
    size = pixels.shape[0]
    while queue:
        r, c = queue.popleft()
        if (r, c) == b:
            return True
        for dr in range(-BRIDGE, BRIDGE + 1):
            for dc in range(-BRIDGE, BRIDGE + 1):
                q = (r + dr, c + dc)
                if 0 <= q[0] < size and 0 <= q[1] < size and lit[q] and not seen[q]:
                    seen[q] = True
                    queue.append(q)
    return False


def marker_centres(pixels: np.ndarray) -> list[tuple[int, int]]:
    """Centres of the 3x3 blocks at full brightness, found from the image alone."""
    labels, count = ndimage.label(pixels == 255, structure=np.ones((3, 3)))
    centres = ndimage.center_of_mass(pixels == 255, labels, range(1, count + 1))
    return [(round(r), round(c)) for r, c in centres]
