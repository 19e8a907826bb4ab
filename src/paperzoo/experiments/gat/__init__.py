"""Generative Adversarial Trainer (Lee, Han and Lee, 2017, arXiv:1705.03387).

``experiment.py``: ``GATExperiment``. Protocol, deviations and measured numbers: docs/gat.md.
"""
