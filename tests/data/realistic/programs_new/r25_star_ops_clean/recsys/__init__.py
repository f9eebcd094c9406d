"""Small recommender toolkit: id/pooling ops and a DLRM-style click-through-rate model."""
from .ops import *
from .model import DLRMLite, SparseField

__version__ = "0.4.2"
