"""A parameter typed by its annotation (issue 19, "Types"): `Optional[Scaler]`, `Union[A, B]`, `A | None` and
`typing.Optional[...]` name the classes whose methods a call on the parameter reaches, as a plain `Scaler`
annotation did. Nobody calls `amax_of` here, so its callers say nothing: only the annotation types `scaler`.
A function whose returns say nothing (an abstract method) is typed by its return annotation, when that names a
class of the workspace."""

from __future__ import annotations

import pytest

from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve.workspace import Workspace

SCALERS = """import torch


class Scaler:
    def amax(self, x):
        return x.abs().max().item()


class Other:
    def amax(self, x):
        return float(x.abs().max())
"""

CAPTURE = """from typing import Optional, Union
import typing

import torch
from scalers import Other, Scaler


def amax_of(x, scaler: ANNOTATION = None):
    return scaler.amax(x)


def capture(x):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = amax_of(x)
    return g, y
"""


def _scaler_findings(capture: str, scalers: str = SCALERS) -> list[tuple[int, str]]:
    """(line, severity) of the findings in scalers.py, with `capture` as capture.py."""
    ws = Workspace()
    ws.add_text("scalers.py", scalers)
    ws.add_text("capture.py", capture)
    return sorted((f.start_line + 1, f.severity) for f in analyse_workspace(ws)["scalers.py"])


def _flagged(annotation: str) -> list[tuple[int, str]]:
    return _scaler_findings(CAPTURE.replace("ANNOTATION", annotation))


@pytest.mark.parametrize("annotation", ["Scaler", "Optional[Scaler]", "typing.Optional[Scaler]", "Scaler | None",
                                        "Union[Scaler, None]"])
def test_an_annotated_parameter_reaches_its_class_s_method(annotation: str) -> None:
    found = _flagged(annotation)
    assert found == [(6, "error")], found


def test_a_union_of_two_classes_is_a_may_be() -> None:
    found = _flagged("Union[Scaler, Other]")
    assert found == [(6, "warning"), (11, "warning")], found  # either may be it


def test_a_project_class_named_optional_is_not_taken_apart() -> None:
    own = SCALERS + "\n\nclass Optional:\n    def __class_getitem__(cls, item):\n        return cls\n"
    capture = CAPTURE.replace("from typing import Optional, Union", "from scalers import Optional")
    found = _scaler_findings(capture.replace("ANNOTATION", "Optional[Scaler]"), own)
    assert [x for x in found if x[0] == 6] == [], found


def test_no_annotation_and_no_caller_reaches_nothing() -> None:
    assert _flagged("int") == []


FACTORY = """import abc

import torch
from scalers import Scaler


class Recipe(abc.ABC):
    @abc.abstractmethod
    def scaler(self) -> RETURN:
        raise NotImplementedError


def capture(recipe: Recipe, x):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = recipe.scaler().amax(x)
    return g, y
"""


def _factory_flagged(ret: str) -> list[tuple[int, str]]:
    return _scaler_findings("from typing import Optional\n" + FACTORY.replace("RETURN", ret))


@pytest.mark.parametrize("ret", ["Scaler", "Optional[Scaler]", "Scaler | None"])
def test_an_abstract_method_s_return_annotation_types_its_result(ret: str) -> None:
    found = _factory_flagged(ret)
    assert found == [(6, "error")], found


def test_a_library_return_annotation_gives_no_value() -> None:
    assert _factory_flagged("torch.Tensor") == []  # a tensor's .amax is torch's, not Scaler.amax


LOOP = """from collections.abc import Sequence
from typing import List, Tuple

import torch
from scalers import Scaler


def amax_all(xs, scalers: ANNOTATION):
    return [s.amax(x) for s, x in zip(scalers, xs)] + [scalers[0].amax(xs[0])]


def capture(xs):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        ys = amax_all(xs)
    return g, ys
"""


@pytest.mark.parametrize("annotation", ["List[Scaler]", "list[Scaler]", "Sequence[Scaler]", "Tuple[Scaler, ...]",
                                        "Optional[List[Scaler]]"])
def test_a_container_annotation_types_its_elements(annotation: str) -> None:
    found = _scaler_findings("from typing import Optional\n" + LOOP.replace("ANNOTATION", annotation))
    assert found == [(6, "error")], found


def test_a_project_class_named_list_is_not_a_container() -> None:
    capture = LOOP.replace("from typing import List, Tuple", "from scalers import List")
    found = _scaler_findings(capture.replace("ANNOTATION", "List[Scaler]"), SCALERS + "\n\nclass List:\n    pass\n")
    assert [x for x in found if x[0] == 6] == [], found
