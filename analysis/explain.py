"""``analyze.py explain --config NAME[:KEY=VAL,...] [--size M N K] [--gpu KEY] [--json]``: one config's
prediction with the binding roof, every roof, occupancy and notes. (Minimal for now: the ncu counters
beside the model's counts come later.)"""
from __future__ import annotations

import json


def main(args) -> int:
    from model.registry import KernelConfig
    from model.report import prediction_text
    from model.roofline import predict
    from model.spec import load_gpu
    M, N, K = args.size
    p = predict(load_gpu(args.gpu), KernelConfig.parse(args.config), M, N, K)
    print(json.dumps(p.to_json(), indent=2, default=float) if getattr(args, "json", False) else prediction_text(p))
    return 0
