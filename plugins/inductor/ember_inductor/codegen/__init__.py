"""Code generation: kernel backends (C++ today) behind one interface, and the Python wrapper."""
