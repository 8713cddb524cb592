"""Draw edge_val18's shapes and fetch18's configs and shapes at random (numpy seed 1318)."""
import sys, json, numpy as np
sys.path.insert(0, __file__.rsplit("/experiments/", 1)[0])
from experiments.edge_draw import draw
from model.registry import KernelConfig
from model.timing import profile
rng = np.random.default_rng(1318)
def mult(lo, hi, m): return int(rng.integers(lo // m, hi // m + 1)) * m
edge = draw(rng)                       # the edge shapes (experiments.edge_draw), then fetch18 from the same stream
print('edge_val18', edge)
d = json.load(open(__file__.rsplit('/experiments/', 1)[0] + '/model/data/compiler_facts/sm_90.json'))['archs']['sm_90']['facts']
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
