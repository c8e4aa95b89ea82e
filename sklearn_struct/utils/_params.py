"""The constructor of every estimator here: store its arguments unchanged (scikit-learn's contract)."""

import functools
import inspect
import numbers
import threading


def store_init_params(estimator, values):
    """Set each ``__init__`` parameter of ``estimator`` as an attribute, from ``values`` (its ``locals()``).

    The same as writing ``self.name = name`` for every parameter, and nothing else: no validation,
    no conversion (``_parameter_constraints`` are checked in ``fit``), so ``get_params``,
    ``set_params`` and ``clone`` see the arguments exactly as given.

    Examples
    --------
    >>> class Model:
    ...     def __init__(self, *, alpha=1.0, tol=1e-4):
    ...         store_init_params(self, locals())
    >>> vars(Model(alpha=2.0))
    {'alpha': 2.0, 'tol': 0.0001}
    """
    for name, param in inspect.signature(type(estimator).__init__).parameters.items():
        if name != "self" and param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            setattr(estimator, name, values[name])


_SHARED_CONSTRAINTS = {
    "warm_start": ["boolean"],
    "random_state": ["random_state"],
    "n_jobs": [numbers.Integral, None],
    "callback": [None, callable],
    "verbose": ["verbose"],
}


def shared_constraints(*names):
    """``_parameter_constraints`` entries of the parameters that mean the same in every estimator.

    Examples
    --------
    >>> sorted(shared_constraints("n_jobs", "verbose"))
    ['n_jobs', 'verbose']
    """
    return {name: _SHARED_CONSTRAINTS[name] for name in names}


def atomic_fit(fit):
    """Decorator of ``fit`` (and ``fit_transform``) methods: the estimator changes only once the fit has finished.

    ``fit`` runs on a working copy of the estimator (the same parameters and, for warm starts,
    the same fitted attributes); when it returns, the copy's attributes replace the estimator's
    all at once. A fit that raises (bad input found late, a non-finite objective, Ctrl-C in the
    ``callback``) leaves the estimator exactly as it was: a fitted model keeps predicting as
    before. ``fit`` must not change the previous fit's arrays in place.

    A second fit of the same object started while one runs (another thread, or the
    ``callback``) raises ``RuntimeError`` at once and changes nothing: the estimator ends as
    the running fit leaves it, never with parts of two fits.

    Put it below ``@_fit_context(...)``, so that parameters are validated on the estimator itself.

    Examples
    --------
    >>> class Model:
    ...     @atomic_fit
    ...     def fit(self, x):
    ...         self.value_ = x
    ...         if x < 0:
    ...             raise KeyboardInterrupt
    ...         return self
    >>> model = Model().fit(1)
    >>> try:
    ...     model.fit(-1)
    ... except KeyboardInterrupt:
    ...     pass
    >>> model.value_
    1
    """
    @functools.wraps(fit)
    def fit_then_commit(self, *args, **kwargs):
        with _ExclusiveFit(self, fit.__name__):
            work = object.__new__(type(self))
            work.__dict__.update(self.__dict__)
            out = fit(work, *args, **kwargs)
            self.__dict__.update(work.__dict__)  # new and changed attributes first, then the stale ones go:
            for key in [key for key in self.__dict__ if key not in work.__dict__]:  # never an empty estimator
                del self.__dict__[key]
        return self if out is work else out  # fit returns the estimator, fit_transform its result

    return fit_then_commit


# Estimators being fitted, by id, with the thread fitting each: a second fit of the same object
# while one runs is refused (two fits committing into one object could leave the labels of one
# and the weights of the other). Kept here, not on the estimator, so pickling, clone and deepcopy
# see nothing of it.
_FITTING = {}
_FITTING_GUARD = threading.Lock()


class _ExclusiveFit:
    """Context: the estimator is marked as being fitted; entering raises if it already is."""

    def __init__(self, estimator, method):
        self.key, self.name, self.method = id(estimator), type(estimator).__name__, method

    def __enter__(self):
        with _FITTING_GUARD:
            if self.key in _FITTING:
                raise RuntimeError(
                    f"{self.name}.{self.method} was called while another {self.method} of the same {self.name} "
                    f"object is running (in thread {_FITTING[self.key]!r}): concurrent fits of one estimator "
                    f"are refused; fit a copy per thread (sklearn.base.clone(estimator)).")
            _FITTING[self.key] = threading.current_thread().name
        return self

    def __exit__(self, *exc):
        with _FITTING_GUARD:
            _FITTING.pop(self.key, None)
        return False
