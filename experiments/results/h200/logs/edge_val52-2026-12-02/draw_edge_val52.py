"""Draw edge_val52's shapes at random (numpy seed 1352; the recipe of edge_val18 on: experiments.edge_draw)."""
import sys
sys.path.insert(0, __file__.rsplit("/experiments/", 1)[0])
from experiments.edge_draw import draw
print('edge_val52', [list(e) for e in draw(1352)])
