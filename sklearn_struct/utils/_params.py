"""The constructor of every estimator here: store its arguments unchanged (scikit-learn's contract)."""

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
