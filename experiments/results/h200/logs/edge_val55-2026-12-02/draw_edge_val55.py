"""Draw edge_val55's shapes at random (numpy seed 1355; the recipe of edge_val18 on: experiments.edge_draw)."""
import sys
sys.path.insert(0, __file__.rsplit("/experiments/", 1)[0])
from experiments.edge_draw import draw
print('edge_val55', [list(e) for e in draw(1355)])
