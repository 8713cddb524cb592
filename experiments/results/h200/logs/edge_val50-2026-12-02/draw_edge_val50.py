"""Draw edge_val50's shapes at random (numpy seed 1350; the recipe of edge_val18 on: experiments.edge_draw)."""
import sys
sys.path.insert(0, __file__.rsplit("/experiments/", 1)[0])
from experiments.edge_draw import draw
print('edge_val50', [list(e) for e in draw(1350)])
