"""adversarial/attacks."""
