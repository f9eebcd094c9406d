"""IPython / Jupyter tracebacks: frames read from `Cell In[3], line 5` headers and `---->` arrows (ANSI colour
included), so the failing cell line refines the verdict and shows under "where".

Texts marked "verbatim" are copied from real reports (source in the comment); the CUDA-graph notebook
traceback is IPython 8's layout (as in the ANSI-coloured nbformat error output below) around the exact error
text PyTorch 2.11 printed on the H200 for the same hazard (tests/data/gpu/results/logs/01_item_in_capture.log).
"""

from __future__ import annotations

import json
import subprocess
import sys

from denpex.logs.traceback import Frame, frames_before


def frames(text: str) -> list[Frame]:
    lines = list(enumerate(text.splitlines(), start=1))
    return frames_before(lines, None, None)


def row(f: Frame) -> tuple[str, int, str, str]:
    return f.path, f.line, f.function, f.code


# IPython 8, coloured, as stored in a notebook's error output: the traceback list of a public .ipynb found with
# the code search ("Cell \u001b[0;32mIn[110], line 7"), the entries joined with newlines as a kernel prints them.
ANSI_CELL = (
    "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m\n"
    "\x1b[0;31mTypeError\x1b[0m                                 Traceback (most recent call last)\n"
    "Cell \x1b[0;32mIn[110], line 7\x1b[0m\n"
    "\x1b[1;32m      5\x1b[0m \x1b[38;5;28;01mdef\x1b[39;00m\x1b[38;5;250m \x1b[39m\x1b[38;5;21mcal1\x1b[39m():\n"
    "\x1b[1;32m      6\x1b[0m     z\x1b[38;5;241m=\x1b[39mcal(\x1b[38;5;241m4\x1b[39m,\x1b[38;5;241m5\x1b[39m)"
    "\x1b[38;5;241m+\x1b[39m\x1b[38;5;241m1\x1b[39m     \n"
    "\x1b[0;32m----> 7\x1b[0m cal1()\n"
    "\n"
    "Cell \x1b[0;32mIn[110], line 6\x1b[0m, in \x1b[0;36mcal1\x1b[0;34m()\x1b[0m\n"
    "\x1b[1;32m      5\x1b[0m \x1b[38;5;28;01mdef\x1b[39;00m\x1b[38;5;250m \x1b[39m\x1b[38;5;21mcal1\x1b[39m():\n"
    "\x1b[0;32m----> 6\x1b[0m     z\x1b[38;5;241m=\x1b[39mcal(\x1b[38;5;241m4\x1b[39m,\x1b[38;5;241m5\x1b[39m)"
    "\x1b[38;5;241m+\x1b[39m\x1b[38;5;241m1\x1b[39m\n"
    "\n"
    "\x1b[0;31mTypeError\x1b[0m: unsupported operand type(s) for +: 'NoneType' and 'int'\n"
)


def test_ansi_cell_frames() -> None:
    assert [row(f) for f in frames(ANSI_CELL)] == [
        ("Cell In[110]", 7, "<module>", "cal1()"),
        ("Cell In[110]", 6, "cal1", "z=cal(4,5)+1"),
    ]


# verbatim, IPython 7: https://github.com/fastai/fastai/issues/1566 (comment of 2019-02-05)
IPYTHON7 = """\
---------------------------------------------------------------------------
RuntimeError                              Traceback (most recent call last)
<ipython-input-30-c7a9c29f9dd1> in <module>
----> 1 learn.lr_find()
      2 learn.recorder.plot()

~/anaconda3/lib/python3.7/site-packages/fastai/train.py in lr_find(learn, start_lr, end_lr, num_it, stop_div, **kwargs)
     29     cb = LRFinder(learn, start_lr, end_lr, num_it, stop_div)
     30     a = int(np.ceil(num_it/len(learn.data.train_dl)))
---> 31     learn.fit(a, start_lr, callbacks=[cb], **kwargs)
     32\x20
     33 def to_fp16(learn:Learner, loss_scale:float=512., flat_master:bool=False)->Learner:

RuntimeError: CUDA out of memory.
"""


def test_ipython7_frames() -> None:
    fs = frames(IPYTHON7)
    assert [row(f) for f in fs] == [
        ("Cell In[30]", 1, "<module>", "learn.lr_find()"),
        ("~/anaconda3/lib/python3.7/site-packages/fastai/train.py", 31, "lr_find",
         "learn.fit(a, start_lr, callbacks=[cb], **kwargs)"),
    ]
    assert [f.is_library for f in fs] == [False, True]


# verbatim, IPython 8 in VS Code's Jupyter (paths and line numbers written as links):
# https://github.com/ultralytics/ultralytics/issues/7716
VSCODE_LINKS = """\
File ~/miniconda3/envs/computer_vision_projects/lib/python3.10/site-packages/ultralytics/nn/tasks.py:292, in BaseModel._apply(self, fn)
    282 def _apply(self, fn):
    283     \"\"\"
    284     Apply a function to all tensors in the model that are not parameters or registered buffers.
    285\x20
   (...)
    290         (BaseModel): An updated BaseModel object.
    291     \"\"\"
--> [292](https://file+.vscode-resource.vscode-cdn.net/home/tawfik/git/computer_vision_projects/pizza_violation_eagle_vision/~/miniconda3/envs/computer_vision_projects/lib/python3.10/site-packages/ultralytics/nn/tasks.py:292)     self = super()._apply(fn)
    293     m = self.model[-1]  # Detect()
RuntimeError: CUDA error: unspecified launch failure
"""


def test_vscode_linked_frames() -> None:
    assert [row(f) for f in frames(VSCODE_LINKS)] == [
        ("~/miniconda3/envs/computer_vision_projects/lib/python3.10/site-packages/ultralytics/nn/tasks.py", 292,
         "BaseModel._apply", "self = super()._apply(fn)"),
    ]


# verbatim, ipykernel's temporary cell files: https://github.com/wilile26811249/Fastformer-PyTorch/issues/5
IPYKERNEL_TEMP = """\
---------------------------------------------------------------------------
TypeError                                 Traceback (most recent call last)
C:\\Users\\ADMINI~1\\AppData\\Local\\Temp/ipykernel_21240/4222065097.py in <module>
----> 1 model = Fastformer(dim = 3, decode_dim = 8)
      2 x = torch.randn(4, 6, 3)

TypeError: 'module' object is not callable
"""


def test_ipykernel_temp_file_frames() -> None:
    assert [row(f) for f in frames(IPYKERNEL_TEMP)] == [
        ("C:\\Users\\ADMINI~1\\AppData\\Local\\Temp/ipykernel_21240/4222065097.py", 1, "<module>",
         "model = Fastformer(dim = 3, decode_dim = 8)"),
    ]


def test_walk_stops_at_the_ipython_header() -> None:
    # frames of an earlier traceback above IPython's header line are not this exception's
    text = 'Traceback (most recent call last):\n  File "old.py", line 3, in <module>\n    boom()\n' + ANSI_CELL
    assert [f.path for f in frames(text)] == ["Cell In[110]", "Cell In[110]"]


# cell 1 defines step(); cell 3 (In[3]) captures it; the error lines are PyTorch 2.11's on the H200
CUDA_GRAPH_CELL = (
    "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m\n"
    "\x1b[0;31mAcceleratorError\x1b[0m                          Traceback (most recent call last)\n"
    "Cell \x1b[0;32mIn[3], line 5\x1b[0m\n"
    "\x1b[1;32m      3\x1b[0m g \x1b[38;5;241m=\x1b[39m torch\x1b[38;5;241m.\x1b[39mcuda\x1b[38;5;241m.\x1b[39mCUDAGraph()\n"
    "\x1b[1;32m      4\x1b[0m \x1b[38;5;28;01mwith\x1b[39;00m torch\x1b[38;5;241m.\x1b[39mcuda\x1b[38;5;241m.\x1b[39mgraph(g):\n"
    "\x1b[0;32m----> 5\x1b[0m     y \x1b[38;5;241m=\x1b[39m \x1b[43mstep\x1b[49m\x1b[43m(\x1b[49m\x1b[43mx\x1b[49m\x1b[43m)\x1b[49m\n"
    "\n"
    "Cell \x1b[0;32mIn[1], line 5\x1b[0m, in \x1b[0;36mstep\x1b[0;34m(x)\x1b[0m\n"
    "\x1b[1;32m      4\x1b[0m \x1b[38;5;28;01mdef\x1b[39;00m\x1b[38;5;250m \x1b[39m\x1b[38;5;21mstep\x1b[39m(x):\n"
    "\x1b[0;32m----> 5\x1b[0m     s \x1b[38;5;241m=\x1b[39m \x1b[43mx\x1b[49m\x1b[38;5;241;43m.\x1b[39;49m\x1b[43msum\x1b[49m\x1b[43m(\x1b[49m\x1b[43m)\x1b[49m"
    "\x1b[38;5;241;43m.\x1b[39;49m\x1b[43mitem\x1b[49m\x1b[43m(\x1b[49m\x1b[43m)\x1b[49m\n"
    "\x1b[1;32m      6\x1b[0m     \x1b[38;5;28;01mreturn\x1b[39;00m x \x1b[38;5;241m*\x1b[39m s\n"
    "\n"
    "\x1b[0;31mAcceleratorError\x1b[0m: CUDA error: operation not permitted when stream is capturing\n"
    "Search for `cudaErrorStreamCaptureUnsupported' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
    "group__CUDART__TYPES.html for more information.\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
)


def test_diagnose_refines_from_the_cell_line() -> None:
    r = subprocess.run([sys.executable, "-m", "denpex", "diagnose", "-", "--format", "json"],
                       input=CUDA_GRAPH_CELL.encode(), capture_output=True, timeout=120, check=False)
    assert r.returncode == 1, r.stderr
    v = json.loads(r.stdout)["verdict"]
    # the generic CUDA 900 verdict is refined by the failing cell line `s = x.sum().item()`
    assert v["rule"] == "capture-item-sync" and v["via"] == "cuda-900-capture-unsupported"
    assert [(f["path"], f["line"], f["function"], f["code"]) for f in v["frames"]] == [
        ("Cell In[3]", 5, "<module>", "y = step(x)"),
        ("Cell In[1]", 5, "step", "s = x.sum().item()"),
    ]
    text = subprocess.run([sys.executable, "-m", "denpex", "diagnose", "-"], input=CUDA_GRAPH_CELL.encode(),
                          capture_output=True, timeout=120, check=False).stdout.decode()
    assert "    Cell In[1]:5 in step: s = x.sum().item()" in text
