"""The log pipeline: normalise, prefilter, attribute, decide, render."""

from denpex.logs.diagnose import (
    Diagnosis,
    Finding,
    Verdict,
    diagnose_stream,
    diagnose_text,
)
from denpex.logs.diagnose_file import diagnose_path

__all__ = ["Diagnosis", "Finding", "Verdict", "diagnose_path", "diagnose_stream", "diagnose_text"]
