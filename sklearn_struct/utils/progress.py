"""Progress of long fits: one ``verbose`` line per iteration and the user's ``callback``.

Every iterative estimator reports through :class:`Progress`, so the lines look alike
(scikit-learn style, ``[Name] iter    3  objective -12.5  gap 0.01  (0.4 s)``) and the
``callback`` parameter has one contract everywhere, that of :class:`~sklearn_struct.ChainCRF`:
``callback(iteration, objective, seconds)`` after each iteration (epoch, pass) of the fit,
returning True to stop the fit there.
"""

import numbers
import time

import numpy as np

__all__ = ["Progress"]


class Progress:
    """Reporter of an iterative fit: prints when ``verbose``, calls ``callback``, remembers a stop.

    Parameters
    ----------
    name : str
        Printed in brackets at the start of each line (the estimator's class name).
    verbose : int, default=0
        Print one line per reported iteration when > 0.
    callback : callable or None, default=None
        ``callback(iteration, objective, seconds)``; a return value of True stops the fit.
        Iteration 0 (the starting point, where a fit reports one) is printed but not passed
        to the callback.
    unit : str, default="iter"
        What one iteration is called in the lines ("iter", "epoch", "pass").
    objective : str, default="objective"
        What the reported value is called in the lines.
    start : float or None, default=None
        ``time.perf_counter()`` at the start of the fit; now if None.

    Attributes
    ----------
    stopped : bool
        Whether the callback has asked to stop.

    Examples
    --------
    >>> progress = Progress("Model", verbose=1, callback=lambda it, obj, sec: it >= 2, start=0.0)
    >>> progress(1, 3.5, seconds=0.5, gap=0.125)
    [Model] iter    1  objective 3.5  gap 0.125  (0.5 s)
    False
    >>> progress(2, 3.25, seconds=1.0), progress.stopped
    [Model] iter    2  objective 3.25  (1.0 s)
    (True, True)
    """

    def __init__(self, name, verbose=0, callback=None, *, unit="iter", objective="objective", start=None):
        self.name = name
        self.verbose = verbose
        self.callback = callback
        self.unit = unit
        self.objective = objective
        self.start = time.perf_counter() if start is None else start
        self.stopped = False

    def elapsed(self):
        """Seconds since ``start``."""
        return time.perf_counter() - self.start

    def __call__(self, iteration, objective, seconds=None, **extra):
        """Report one iteration; returns True once the callback has asked to stop.

        ``seconds`` defaults to :meth:`elapsed`; ``extra`` numbers (e.g. ``gap=...``) are
        printed after the objective, underscores in their names read as spaces.
        """
        seconds = self.elapsed() if seconds is None else float(seconds)
        if self.verbose:
            fields = [f"[{self.name}] {self.unit} {iteration:4d}", f"{self.objective} {_format(objective)}"]
            fields += [f"{key.replace('_', ' ')} {_format(value)}" for key, value in extra.items()]
            print("  ".join(fields) + f"  ({seconds:.1f} s)")
        if iteration >= 1 and self.callback is not None:
            answer = self.callback(iteration, float(objective), seconds)
            self.stopped = self.stopped or (isinstance(answer, (bool, np.bool_)) and bool(answer))
        return self.stopped


def _format(value):
    if isinstance(value, numbers.Real):
        return f"{value:.6g}"
    return np.array2string(np.asarray(value), precision=4, separator=" ")
