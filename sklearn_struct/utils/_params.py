"""The constructor of every estimator here: store its arguments unchanged (scikit-learn's contract)."""

import functools
import inspect
import numbers


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
        work = object.__new__(type(self))
        work.__dict__.update(self.__dict__)
        out = fit(work, *args, **kwargs)
        self.__dict__.clear()
        self.__dict__.update(work.__dict__)
        return self if out is work else out  # fit returns the estimator, fit_transform its result

    return fit_then_commit
