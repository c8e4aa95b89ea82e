"""``predict_proba`` for the estimators whose probabilities are marginals: written once."""

__all__ = ["MarginalsAsProbaMixin"]


class MarginalsAsProbaMixin:
    """``predict_proba(X)``: the marginals of ``predict_marginals(X)`` under scikit-learn's name.

    So that a :class:`~sklearn.pipeline.Pipeline` ending in the estimator (e.g. behind a featurizer)
    reaches them: ``Pipeline`` delegates ``predict_proba``, not ``predict_marginals``.
    """

    def predict_proba(self, X):
        """The marginals of :meth:`predict_marginals` under scikit-learn's name.

        So that a :class:`~sklearn.pipeline.Pipeline` ending in this estimator (e.g. behind a
        featurizer) reaches them: ``Pipeline`` delegates ``predict_proba``, not ``predict_marginals``.

        Returns
        -------
        marginals : list of ndarray
            What :meth:`predict_marginals` returns (its page gives the shapes).
        """
        return self.predict_marginals(X)
