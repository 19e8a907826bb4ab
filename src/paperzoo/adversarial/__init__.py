"""adversarial."""
