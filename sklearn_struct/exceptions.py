"""Exceptions raised by sklearn_struct (besides scikit-learn's ``NotFittedError`` and ``ConvergenceWarning``)."""

from .utils._model_file import ModelFileError

__all__ = ["ModelFileError"]
