"""attnmath: the mechanisms of attention, one module each, tested against PyTorch.

Import what you need from its module, e.g. ``from attnmath.softmax import softmax``. The torch
modules live in :mod:`attnmath.nn` (imported on demand, so NumPy users never load torch).
"""

__version__ = "0.1.0"
