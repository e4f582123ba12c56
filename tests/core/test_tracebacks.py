"""Tracebacks through compiled code show the user's code: an exception raised by an op of a
graph, by the user's code in a resume function or at a graph break, or by a custom backend
ends in the frames eager Python would show (file, function, line), with at most one of
ember's frames; pdb lands on a user frame; ``-X importtime`` and cProfile keep working."""
from __future__ import annotations

import cProfile
import io
import os
import pdb
import pstats
import subprocess
import sys
import traceback
import warnings
from typing import Any, Callable

import pytest
import torch

import ember

EMBER_DIR = os.path.dirname(ember.__file__)
TORCH_DIR = os.path.dirname(torch.__file__)


def _raised(fn: Callable[..., Any], *args: Any) -> BaseException:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fallbacks of the failing part warn; not what is tested
        with pytest.raises(Exception) as info:
            fn(*args)
    return info.value


def _frames(exc: BaseException) -> list[tuple[str, int, str]]:
    """(file, line, function) of the frames below this test's own, outermost first."""
    frames = [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(exc.__traceback__)]
    return frames[1:]


def _user_frames(exc: BaseException) -> list[tuple[str, int, str]]:
    return [f for f in _frames(exc) if not f[0].startswith((EMBER_DIR, TORCH_DIR))]


def _check_like_eager(fn: Callable[..., Any], args: tuple, backend: Any = "eager", ember_frames: int = 1
                      ) -> BaseException:
    """The compiled call raises what eager raises, at the same user frames, through at most
    ``ember_frames`` frames of ember's (the wrapper the user called, as torch.compile's own)."""
    expected = _raised(fn, *args)
    got = _raised(ember.compile(fn, backend=backend), *args)
    assert type(got) is type(expected)
    assert str(got).splitlines()[0] == str(expected).splitlines()[0]  # pytest's rewritten asserts name addresses
    assert _user_frames(got) == _user_frames(expected)
    assert _frames(got)[-1] == _user_frames(got)[-1]  # the innermost frame is the user's
    ours = [f for f in _frames(got) if f[0].startswith(EMBER_DIR) or f[0].startswith("<")]
    assert len(ours) <= ember_frames, ours
    return got


def _pick(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return torch.gather(x, 0, idx)  # an index only the real data shows to be out of range


def _graph_op_raises(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    y = x * 2
    z = _pick(y, idx)
    return z + 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_an_op_of_a_graph_raises_at_the_users_line(backend: str) -> None:
    got = _check_like_eager(_graph_op_raises, (torch.randn(4), torch.tensor([7])), backend)
    assert [f[2] for f in _frames(got)[-2:]] == ["_graph_op_raises", "_pick"]
    assert "gather" in "".join(got.__notes__)  # the note names the graph's op


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        h = self.lin(x).relu()
        return torch.gather(h, 1, idx)


def test_a_compiled_module_raises_at_its_forward_line() -> None:
    # ember's frames: the compiled module's forward and the wrapper it calls
    got = _check_like_eager(_Net(), (torch.randn(2, 4), torch.tensor([[9], [0]])), "aot_eager", ember_frames=2)
    assert _frames(got)[-1][2] == "forward"


def _resume_part_raises(x: torch.Tensor) -> torch.Tensor:
    y = x.sin()
    print("a graph break")
    z = y.cos()
    if z.shape[0] == 4:
        raise ValueError("the user's own error after the break")
    return z


def test_the_resume_function_raises_at_the_users_line(capsys: pytest.CaptureFixture) -> None:
    got = _check_like_eager(_resume_part_raises, (torch.randn(4),))
    # the resume function reads as the user's function; the break's runner is left out
    assert _frames(got)[-1] == (__file__, _resume_part_raises.__code__.co_firstlineno + 5, "_resume_part_raises")


def _user_assert_after_break(x: torch.Tensor) -> torch.Tensor:
    y = x.sin()
    print("a graph break")
    z = y.cos()
    assert z.sum() > 100, "too small"
    return z


def test_a_user_assert_in_the_resume_part() -> None:
    _check_like_eager(_user_assert_after_break, (torch.randn(4),))


def _raises_at_the_break(x: torch.Tensor) -> torch.Tensor:
    y = x + 1
    int("not a number: " + str(y.shape[0]))  # runs in Python at a graph break
    return y


def test_user_code_raising_at_a_graph_break() -> None:
    got = _check_like_eager(_raises_at_the_break, (torch.randn(3),))
    assert _frames(got)[-1][2] == "_raises_at_the_break"


def _plain(x: torch.Tensor) -> torch.Tensor:
    return x.cos() + 1


def _failing_backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        raise ValueError("the backend failed when it ran")

    return run


def test_a_custom_backend_raising_shows_its_own_line() -> None:
    got = _raised(ember.compile(_plain, backend=_failing_backend), torch.randn(3))
    frames = _frames(got)
    assert frames[-1] == (__file__, _failing_backend.__code__.co_firstlineno + 2, "run")
    assert frames[-2][0] == __file__ and frames[-2][2] == "_plain"  # the graph's caller: the user's function
    assert not any("<ember" in f[0] for f in frames)


def test_wrong_arguments_raise_the_type_error_python_would() -> None:
    eager = _raised(_plain)
    compiled = _raised(ember.compile(_plain, backend="eager"))
    assert type(compiled) is TypeError and str(compiled) == str(eager)


def test_hf_bert_with_ids_out_of_its_vocabulary_raises_at_the_same_user_line() -> None:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37, vocab_size=99)).eval()
    input_ids = torch.randint(0, 99, (2, 8))
    input_ids[1, 5] = 120  # a tokenizer with a larger vocabulary: only the data shows it
    attention_mask = torch.ones(2, 8, dtype=torch.long)

    def encode(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    expected = _raised(encode, model, input_ids, attention_mask)
    got = _raised(ember.compile(encode, backend="eager"), model, input_ids, attention_mask)
    assert type(got) is type(expected) and str(got) == str(expected)
    innermost = _user_frames(expected)[-1]
    assert innermost[0].endswith("modeling_bert.py")
    assert _user_frames(got)[-1] == innermost
    assert _user_frames(got)[0] == _user_frames(expected)[0]  # ``encode``'s line


def test_pdb_post_mortem_lands_on_the_users_frame_with_its_locals() -> None:
    exc = _raised(ember.compile(_user_assert_after_break, backend="eager"), torch.full((4,), 0.5))
    out = io.StringIO()
    debugger = pdb.Pdb(stdin=io.StringIO("p z.shape\np __name__\nquit\n"), stdout=out, nosigint=True)
    debugger.reset()
    debugger.interaction(None, exc.__traceback__)  # what pdb.post_mortem does
    text = out.getvalue()
    assert f"{__file__}({_user_assert_after_break.__code__.co_firstlineno + 4})_user_assert_after_break()" in text
    assert "torch.Size([4])" in text


def test_python_importtime_of_ember() -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import ember"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| ember" in done.stderr


def test_cprofile_over_a_compiled_call() -> None:
    compiled = ember.compile(_resume_part_raises, backend="eager")
    x = torch.randn(3)
    profile = cProfile.Profile()
    result = profile.runcall(compiled, x)
    torch.testing.assert_close(result, x.sin().cos())
    stats = pstats.Stats(profile, stream=io.StringIO())
    places = {(file, name) for file, _, name in stats.stats}  # type: ignore[attr-defined]
    assert (__file__, "_resume_part_raises") in places  # runner and resume read as the user's function
