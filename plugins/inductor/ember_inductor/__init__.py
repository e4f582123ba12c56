"""ember_inductor plugin (work in progress)."""
