"""Exact theory of ES populations on toy categorical policies: Lemmas 1-3, Proposition 1, shared metrics."""
