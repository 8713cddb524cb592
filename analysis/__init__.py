"""Model versus measured: loading the shipped JSON Lines, comparing them with the model, plots and the report.

``data`` reads measurement rows, ``compare`` joins them with predictions and scores the model,
``plots`` draws PNGs, ``report`` writes ``reports/report.md`` (what ``python analyze.py`` does) and
``explain`` prints one config's prediction. Nothing here needs a GPU.
"""
