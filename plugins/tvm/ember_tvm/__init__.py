"""ember_tvm plugin (work in progress)."""
