"""``EMBER_REPORT=folder`` writes one HTML page at exit: each compiled function with its source,
graphs (code and guards), graph breaks with the user's lines and reasons, fallbacks and
recompilations; checked on a real process run as a user would."""
from __future__ import annotations

import html.parser
import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent('''
    import torch, ember

    def step(x, scale):
        y = torch.sin(x) * scale
        print("between graphs")     # a graph break
        return torch.cos(y) + 1

    def refuses(x):
        return torch.relu(x) + x.numpy().sum()   # Tensor.numpy(): a break

    fn = ember.compile(step, backend="eager")
    fn(torch.ones(3), 2.0)
    fn(torch.ones(3), 3.0)                       # another constant: recompiled
    ember.compile(refuses, backend="eager")(torch.ones(2))
''')


class _Collect(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.text: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag not in ("meta", "br"):
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, (self.open[-3:], tag)
        self.open.pop()

    def handle_data(self, data):
        self.text.append(data)


def test_the_report_of_a_run_shows_graphs_breaks_and_recompiles(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    folder = tmp_path / "report"
    env = {"EMBER_REPORT": str(folder), "PATH": "/usr/bin:/bin"}
    import os
    env = {**os.environ, **env}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    page = (folder / "index.html").read_text()
    parser = _Collect()
    parser.feed(page)
    parser.close()
    assert parser.open == [], parser.open  # every element closed, in order
    text = "".join(parser.text)
    assert "step (" in text and "refuses (" in text
    assert 'print("between graphs")' in text        # the source, and the line of the break
    assert "graph break" in text and "recompiled" in text
    assert "torch.sin" in text and "torch.cos" in text  # both graphs' code
    assert "numpy" in text
