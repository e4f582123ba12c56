"""ember_inductor: the fusion compiler behind backend ``inductor`` (C++/OpenMP on CPUs, Triton on GPUs)."""
