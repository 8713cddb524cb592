"""Developer tools of gemmscope that need extra packages (see ``requirements-facts.txt``).

Nothing in ``model/`` imports this package: the model reads only the data these tools ship.
"""
