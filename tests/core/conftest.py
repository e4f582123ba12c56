import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture
def native() -> type:
    """The C++ tensor check (ember.native_guards), built here or skipped."""
    from ember import native_guards
    TensorMatch = native_guards.tensor_match()
    if TensorMatch is None:
        pytest.skip("the C++ tensor check could not be built here")
    return TensorMatch
