"""ember_cudagraphs plugin (work in progress)."""
