"""Jupyter notebooks: code cells as one program (`cells`), `.ipynb` files read and edited in place (`ipynb`),
fixes mapped to the cells they edit (`fixes`)."""

from denpex.notebook.cells import CellPosition, CellProgram, python_lines
from denpex.notebook.ipynb import Notebook, NotebookError

__all__ = ["CellPosition", "CellProgram", "Notebook", "NotebookError", "python_lines"]
