"""adversarial/defenses."""
