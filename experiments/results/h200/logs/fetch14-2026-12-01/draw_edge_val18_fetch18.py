"""Draw edge_val18's shapes and fetch18's configs and shapes at random (numpy seed 1318)."""
import sys, json, numpy as np
sys.path.insert(0, '/work/main')
from model.registry import KernelConfig, geometry
from model.timing import profile
rng = np.random.default_rng(1318)
def mult(lo, hi, m): return int(rng.integers(lo // m, hi // m + 1)) * m
def odd(lo, hi): return int(rng.integers(lo // 2, hi // 2)) * 2 + 1
edge = []
edge += [(mult(2048, 6912, 64), mult(2048, 6912, 64), int(rng.integers(16, 257))) for _ in range(3)]   # small K
for _ in range(2): edge.append((int(rng.integers(1, 65)), mult(2048, 6912, 64), mult(1024, 4096, 64)))  # skinny M
for _ in range(2): edge.append((mult(2048, 6912, 64), int(rng.integers(1, 65)), mult(1024, 4096, 64)))  # skinny N
edge += [tuple(int(rng.integers(64, 529)) for _ in range(3)) for _ in range(2)]                          # small
edge += [tuple(odd(1001, 3001) for _ in range(3)) for _ in range(2)]                                     # odd
edge.append((mult(4096, 6400, 128), mult(4096, 6400, 128), mult(1024, 2048, 128)))                        # large
print('edge_val18', edge)
d = json.load(open('/work/main/model/data/compiler_facts/sm_90.json'))['archs']['sm_90']['facts']
cand = []
for k in sorted(d):
    if k[:3] not in ('08:', '09:', '10:', '11:', '12:'):
        continue
    p = profile(KernelConfig.parse(k), 'sm_90')
    c = p.code_bytes
    if c[3] > 131072 >= c[4]:          # the SASS exceeds the cache, the code a block runs fits it
        cand.append(k)
print(len(cand), 'candidates')
pick = [str(x) for x in rng.choice(cand, 8, replace=False)]
print('configs', pick)
shapes = {}
for k in pick:
    # one to three rounds of blocks (M, N 512-4096), K small (16-512): the first round's fetch is a large share
    shapes[k] = [(mult(512, 4096, 64), mult(512, 4096, 64), int(rng.integers(16, 513))) for _ in range(2)]
print('shapes', shapes)
