"""paperzoo's ten papers, one package each, all of the same shape: ``config`` (the settings of
each scale, the paper's numbers and the claims), ``experiment`` (the ``Experiment`` subclass:
plan, run, merge, figures), ``training`` (data splits, training loops, evaluation) and whatever
else the paper needs (``plots``, ``geometry``, ``study``, ...).

Each package exports ``CLAIMS``, ``CONFIGS``, ``Config`` and its experiment class; importing it
imports no model or training code (those are imported when the paper runs). None of them is
imported by importing this package: paperzoo's pyproject.toml declares the ten under the
``paperzoo.papers`` entry point group, the door a researcher's own paper comes through too, and
``paperzoo.experiments.EXPERIMENTS`` reads that group on its first look-up.
"""
