"""DRAW (Gregor et al., ICML 2015): binarized-MNIST likelihood with and without attention.

``experiment.py``: ``DRAWExperiment``. Protocol, deviations and measured numbers: docs/draw.md.
"""
