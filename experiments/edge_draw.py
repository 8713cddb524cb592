"""The random edge shapes of the validation edge sets from edge_val18 on: twelve shapes drawn with numpy's default
generator from one seed - three small-K with large M and N, two skinny M, two skinny N, two small, two odd, one large.

    python -m experiments.edge_draw SEED      # prints the shapes as a TOML list

The draw scripts in ``experiments/results/h200/logs/`` record each set's seed (edge_val18's in ``fetch14-2026-12-01/``,
edge_val19's in ``fetch19-2026-12-01/``, the later ones in ``edge_val*-2026-12-01/``)."""
from __future__ import annotations

import sys


def draw(seed) -> list[tuple[int, int, int]]:
    """The twelve (M, N, K) of the set drawn with ``seed`` (an int, or a numpy Generator that the caller draws more
    from after: edge_val18's script draws fetch18's configs from the same stream)."""
    import numpy as np
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    def mult(lo: int, hi: int, m: int) -> int:
        return int(rng.integers(lo // m, hi // m + 1)) * m

    def odd(lo: int, hi: int) -> int:
        return int(rng.integers(lo // 2, hi // 2)) * 2 + 1

    edge = [(mult(2048, 6912, 64), mult(2048, 6912, 64), int(rng.integers(16, 257))) for _ in range(3)]   # small K
    edge += [(int(rng.integers(1, 65)), mult(2048, 6912, 64), mult(1024, 4096, 64)) for _ in range(2)]  # skinny M
    edge += [(mult(2048, 6912, 64), int(rng.integers(1, 65)), mult(1024, 4096, 64)) for _ in range(2)]  # skinny N
    edge += [tuple(int(rng.integers(64, 529)) for _ in range(3)) for _ in range(2)]                     # small
    edge += [tuple(odd(1001, 3001) for _ in range(3)) for _ in range(2)]                                # odd
    edge.append((mult(4096, 6400, 128), mult(4096, 6400, 128), mult(1024, 2048, 128)))                   # large
    return edge


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].isdigit():
        print("edge_draw: give one seed, a non-negative integer", file=sys.stderr)
        return 2
    print([list(e) for e in draw(int(args[0]))])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
