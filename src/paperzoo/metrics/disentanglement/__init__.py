"""metrics/disentanglement."""
