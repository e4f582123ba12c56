"""ember_aot plugin (work in progress)."""
