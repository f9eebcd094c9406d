"""Frames of IPython / Jupyter tracebacks, which do not use Python's `File "...", line N, in f` lines.

IPython's verbose traceback (what a notebook cell, `ipython` and VS Code's Jupyter print) writes a header line
`NameOfError      Traceback (most recent call last)`, then per frame a header and a few numbered source lines,
the failing one marked with an arrow. The frame headers of the IPython releases in use (texts as printed in
real reports, cited in tests/logs/test_notebook_tracebacks.py):

- IPython >= 8.6: `Cell In[3], line 5` (a cell's top level), `Cell In[1], line 5, in step(x)` (a function of
  a cell), `File ~/env/lib/python3.11/site-packages/torch/nn/modules/module.py:1532, in Module._call_impl(...)`
  (a file; VS Code's Jupyter writes the path as a link: `File [~/...py:1518](https://...), in ...`);
- IPython 8.0-8.5: `Input In [3], in <cell line: 5>()`, `Input In [1], in step(x)` (the line only in the arrow);
- IPython 7: `<ipython-input-3-c7a9c29f9dd1> in <module>`, `~/anaconda3/lib/python3.7/site-packages/fastai/
  train.py in lr_find(learn, ...)`, ipykernel's `/tmp/ipykernel_21240/4222065097.py in <module>`.

The arrow line is `----> 5     y = step(x)` (`-->`, `->` for wider numbers; `-> [1532](https://...)` in VS
Code). A cell frame's path is `Cell In[3]`: the number is the cell's execution count, the `[3]` shown next to
the cell, and the line is the line within that cell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from denpex.logs.normalise import clean, clean_already

_HEADER = re.compile(r"^\S{1,300}\s+Traceback \(most recent call last\)")
_CELL = re.compile(r"^\s*Cell In\s?\[(?P<count>\d{1,9})\], line (?P<line>\d{1,9})(?:, in (?P<func>.{1,300}))?$")
_INPUT = re.compile(r"^\s*Input In \[(?P<count>\d{1,9})\], in (?P<func>.{1,300})$")
_IPY_INPUT = re.compile(r"^\s*<ipython-input-(?P<count>\d{1,9})-[0-9a-f]{1,40}> in (?P<func>.{1,300})$")
_FILE = re.compile(r"^\s*File \[?(?P<path>[^\"\[\]\n]{1,1000}?):(?P<line>\d{1,9})(?:\]\([^)\s]{0,2000}\))?"
                   r"(?:, in (?P<func>.{1,300}))?$")
_OLD_FILE = re.compile(r"^\s*(?P<path>(?:~|/|[A-Za-z]:\\)[^\s\"]{0,1000}\.py) in (?P<func>.{1,300})$")
_ARROW = re.compile(r"^\s*-+> ?(?:\[(?P<linked>\d{1,9})\]\([^)\s]{0,2000}\)|(?P<line>\d{1,9}))(?P<code>.*)$")
_CELL_LINE = re.compile(r"<cell line: (\d{1,9})>")


@dataclass(frozen=True)
class Arrow:
    """The `---->` line of a frame: its line number and code."""

    line: int
    code: str


@dataclass(frozen=True)
class IPythonFrame:
    path: str  # "Cell In[3]" for a cell, the file's path otherwise
    line: int
    function: str
    code: str


def is_header(text: str) -> bool:
    """IPython's `SomeError     Traceback (most recent call last)` line, where a traceback starts."""
    return "Traceback (most recent call last)" in text and _HEADER.match(clean(text)) is not None


def arrow(text: str) -> Arrow | None:
    if "->" not in text:
        return None
    m = _ARROW.match(clean(text))
    if m is None:
        return None
    return Arrow(int(m["linked"] or m["line"]), m["code"].strip())


def _function(sig: str | None) -> str:
    """`step(x)` -> `step`; `<cell line: 5>()` and no name -> `<module>` (the cell's top level)."""
    if not sig or sig.startswith("<cell line:"):
        return "<module>"
    return sig.split("(", 1)[0].strip() or "<module>"


_FRAME_KEYS = ("Cell In", "Input In", "ipython-input", "File ", ".py in ")


def frame(text: str, after: Arrow | None) -> IPythonFrame | None:
    """The frame whose header is `text`; `after` is the arrow line that follows it in the traceback."""
    # text that cleaning leaves as it is and that has no keyword cannot gain one: most traceback
    # and log lines ("[rank0]:", "[INFO]" hold a "[" but no colour code) skip the cleaning
    if clean_already(text) and not any(k in text for k in _FRAME_KEYS):
        return None
    line = clean(text)
    if not any(k in line for k in _FRAME_KEYS):
        return None
    code = after.code if after is not None else ""
    if (m := _CELL.match(line)) is not None:
        return IPythonFrame(f"Cell In[{m['count']}]", int(m["line"]), _function(m["func"]), code)
    if (m := _INPUT.match(line)) is not None:
        at = _CELL_LINE.search(m["func"])
        n = int(at.group(1)) if at else (after.line if after is not None else 0)
        return IPythonFrame(f"Cell In[{m['count']}]", n, _function(m["func"]), code)
    if (m := _IPY_INPUT.match(line)) is not None:
        return IPythonFrame(f"Cell In[{m['count']}]", after.line if after else 0, _function(m["func"]), code)
    if (m := _FILE.match(line)) is not None:
        return IPythonFrame(m["path"].strip(), int(m["line"]), _function(m["func"]), code)
    if (m := _OLD_FILE.match(line)) is not None:
        return IPythonFrame(m["path"], after.line if after else 0, _function(m["func"]), code)
    return None
