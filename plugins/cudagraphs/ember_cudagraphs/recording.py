"""One recorded graph: its input plan, its output plan, and the recorder's handle to replay it."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from . import registry
from .inputs import InputPlan
from .outputs import OutputPlan


class Recording:
    """``fn`` recorded once for one signature and one set of copied inputs, in a memory pool of
    its own or in the ``pool`` shared with other recordings (``shared``; ``order``: the how-manyth
    capture of its wrapper, so the wrapper knows which recordings were captured after it)."""

    def __init__(self, fn: Callable, args: Sequence[Any], copied: Iterable[int], recorder: Any,
                 pool: Any = None, order: int = 0) -> None:
        self.recorder = recorder
        self.shared, self.order = pool is not None, order
        self.inputs = InputPlan(args, copied)
        static = self.inputs.static_args(args)
        self.inputs.copy_in(args)
        self.handle, outs = recorder.capture(fn, static, pool)
        self.outputs = OutputPlan(outs, static)
        del outs, static
        self._pool_ptrs = self.outputs.storage_ptrs()
        registry.add_pool(self._pool_ptrs)
        self.outputs.seal()

    def busy(self) -> bool:
        """Whether outputs of an earlier replay are still referenced (see ``outputs``)."""
        return self.outputs.busy()

    def replay(self, args: Sequence[Any]) -> Any:
        self.inputs.copy_in(args)
        self.recorder.replay(self.handle, self.inputs, args)
        return self.outputs.build(args)

    def release(self) -> None:
        """Drop the graph and its memory (outputs the caller still holds stay valid)."""
        registry.remove_pool(self._pool_ptrs)
        self._pool_ptrs = []
        self.handle = None
        self.outputs.release()
        self.inputs.release()
