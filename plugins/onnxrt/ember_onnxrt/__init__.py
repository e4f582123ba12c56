"""ember_onnxrt plugin (work in progress)."""
