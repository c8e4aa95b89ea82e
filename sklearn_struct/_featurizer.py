"""The scikit-learn transformer API shared by the sequence featurizers (lists of sequences in,
one feature matrix per sequence out): :class:`~sklearn_struct.preprocessing.SequenceVectorizer`,
:class:`~sklearn_struct.preprocessing.WindowFeaturizer` and
:class:`~sklearn_struct.preprocessing.CRFppTemplateFeaturizer`."""

import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils.validation import check_is_fitted

from .utils._params import atomic_fit


class SequenceFeaturizer(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Base of the sequence featurizers; a subclass defines the steps on its own token form.

    ``_fit(X)`` learns the columns and returns the training features in the subclass's packed
    form, ``_transform(X)`` returns that form for new data, ``_matrices(*packed)`` splits it
    into per-sequence matrices and ``_feature_names()`` names the columns. ``_input_tag`` is
    the scikit-learn input tag of the tokens ("string" or "dict").
    """

    _input_tag = "string"

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y=None):
        """Learn the feature columns from all tokens of all sequences.

        Parameters
        ----------
        X : list of sequences
            Each a list of tokens, in the form the featurizer takes (see its description).
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        self._fit(X)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit_transform(self, X, y=None):
        """Fit, then return the per-sequence feature matrices (one pass over the tokens).

        Parameters
        ----------
        X : list of sequences
        y : None
            Ignored.

        Returns
        -------
        Xt : list of sparse matrices of shape (n_tokens_i, n_features_out)
            CSR matrices (arrays where a ``sparse=False`` parameter asks for them).
        """
        return self._matrices(*self._fit(X))

    def transform(self, X):
        """Features of ``X`` in the fitted columns; features unseen at fit are ignored.

        Parameters
        ----------
        X : list of sequences

        Returns
        -------
        Xt : list of sparse matrices of shape (n_tokens_i, n_features_out)
        """
        check_is_fitted(self)
        return self._matrices(*self._transform(X))

    def get_feature_names_out(self, input_features=None):
        """Names of the output columns.

        Parameters
        ----------
        input_features : None
            Ignored (the input has no columns).

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self)
        return self._feature_names()

    def _feature_names(self):
        return self.vectorizer_.get_feature_names_out()

    def _matrices(self, packed, offsets):
        return split_csr(packed, offsets)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        setattr(tags.input_tags, self._input_tag, True)
        return tags


def split_csr(packed, offsets):
    """Per-sequence CSR matrices sharing the packed arrays (no per-row slicing work)."""
    data, indices, indptr = packed.data, packed.indices, packed.indptr
    n_cols = packed.shape[1]
    out = []
    for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
        lo, hi = indptr[a], indptr[b]
        out.append(
            sp.csr_matrix(
                (data[lo:hi], indices[lo:hi], indptr[a : b + 1] - lo), shape=(b - a, n_cols)
            )
        )
    return out
