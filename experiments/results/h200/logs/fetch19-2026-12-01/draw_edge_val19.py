"""Draw edge_val19's shapes at random (numpy seed 1319: experiments.edge_draw)."""
import sys
sys.path.insert(0, __file__.rsplit("/experiments/", 1)[0])
from experiments.edge_draw import draw
print('edge_val19', draw(1319))
