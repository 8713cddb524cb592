"""Draw the shapes of edge_val16 and splitc16 at random (seed 1316), and the configs of splitc16."""
import sys, json, numpy as np
sys.path.insert(0, '/work/main')
rng = np.random.default_rng(1316)
def mult(lo, hi, m): return int(rng.integers(lo // m, hi // m + 1)) * m
def odd(lo, hi): return int(rng.integers(lo // 2, hi // 2)) * 2 + 1
edge = []
edge += [(mult(2048, 6912, 64), mult(2048, 6912, 64), int(rng.integers(16, 257))) for _ in range(3)]   # small K
for _ in range(2):                                                                                         # skinny M
    edge.append((int(rng.integers(1, 65)), mult(2048, 6912, 64), mult(1024, 4096, 64)))
for _ in range(2):                                                                                         # skinny N
    edge.append((mult(2048, 6912, 64), int(rng.integers(1, 65)), mult(1024, 4096, 64)))
edge += [tuple(int(rng.integers(64, 529)) for _ in range(3)) for _ in range(2)]                          # small
edge += [tuple(odd(1001, 3001) for _ in range(3)) for _ in range(2)]                                     # odd
edge.append((mult(4096, 6400, 128), mult(4096, 6400, 128), mult(1024, 2048, 128)))                        # large
print('edge_val16', edge)
# splitc16: C from 25 to 130 MB at small K
sc = []
for _ in range(10):
    c_mb = float(rng.uniform(25, 130)); m = mult(1536, 7168, 64); n = max(64, int(round(c_mb * 1e6 / 4 / m / 64)) * 64)
    sc.append((m, n, int(rng.integers(16, 321))))
print('splitc16', sc, [round(4 * m * n / 1e6) for m, n, _ in sc])
d = json.load(open('/work/main/model/data/compiler_facts/sm_90.json'))['archs']['sm_90']['facts']
keys = sorted(d)
r12 = [k for k in keys if k.startswith('12:') and 'SPLITK=1,' not in k]
rsc = [k for k in keys if k[:3] in ('07:', '08:', '09:', '10:', '11:') and 'SPLITK=1,' not in k and not k.endswith('SPLITK=1')]
pick12 = list(rng.choice(r12, 5, replace=False)); picks = list(rng.choice(rsc, 3, replace=False))
print('configs', pick12 + picks)
