"""Code generation: kernel backends (C++ and Triton) behind one interface, and the Python wrapper."""
