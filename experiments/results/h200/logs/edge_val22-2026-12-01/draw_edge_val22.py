"""Draw edge_val22's shapes at random (numpy seed 1322; the recipe of edge_val18-21)."""
import numpy as np
rng = np.random.default_rng(1322)
def mult(lo, hi, m): return int(rng.integers(lo // m, hi // m + 1)) * m
def odd(lo, hi): return int(rng.integers(lo // 2, hi // 2)) * 2 + 1
edge = []
edge += [(mult(2048, 6912, 64), mult(2048, 6912, 64), int(rng.integers(16, 257))) for _ in range(3)]   # small K
for _ in range(2): edge.append((int(rng.integers(1, 65)), mult(2048, 6912, 64), mult(1024, 4096, 64)))  # skinny M
for _ in range(2): edge.append((mult(2048, 6912, 64), int(rng.integers(1, 65)), mult(1024, 4096, 64)))  # skinny N
edge += [tuple(int(rng.integers(64, 529)) for _ in range(3)) for _ in range(2)]                          # small
edge += [tuple(odd(1001, 3001) for _ in range(3)) for _ in range(2)]                                     # odd
edge.append((mult(4096, 6400, 128), mult(4096, 6400, 128), mult(1024, 2048, 128)))                        # large
print('edge_val22', [list(e) for e in edge])
