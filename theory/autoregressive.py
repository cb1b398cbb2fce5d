"""Small autoregressive toy: sequences of L tokens from a vocabulary of V, chain-rule Fisher trace.

pi_theta(y_1..y_L) = prod_t softmax(W[h_t] theta + b[h_t])[y_t], where h_t indexes the prefix
y_<t (one softmax head per prefix; the d parameters are shared by every head, as in a network).
The score of a sequence is the sum of the per-step scores, whose conditional means vanish, so
the Fisher information splits by the chain rule:

    I(theta) = sum_t E_{y_<t}[ W_h^T (diag pi_h - pi_h pi_h^T) W_h ],  h = y_<t.

`fisher` uses this chain rule; `fisher_enumerated` sums P(y) s(y) s(y)^T over all V^L sequences,
an independent computation of the same matrix. `probs` lists the V^L sequence probabilities, so
the toy can be treated as a categorical policy over whole sequences.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.special import log_softmax

from escov.theory.policy import PolicyBase, check_correct_mask, check_finite_array


@dataclass(frozen=True)
class SequencePolicy(PolicyBase):
    """Per-prefix softmax heads W [P, V, d], b [P, V] over sequences of `length` tokens."""

    W: np.ndarray
    b: np.ndarray
    length: int
    correct: np.ndarray

    def __post_init__(self) -> None:
        W = check_finite_array("W", self.W, 3)
        b = check_finite_array("b", self.b, 2)
        if isinstance(self.length, bool) or not isinstance(self.length, (int, np.integer)) or self.length < 1:
            raise ValueError(f"length must be an integer >= 1, got {self.length!r}")
        vocab = W.shape[1]
        if vocab < 2:
            raise ValueError(f"W must have a vocabulary axis of size >= 2, got shape {W.shape}")
        n_prefixes = sum(vocab**t for t in range(self.length))
        if W.shape[0] != n_prefixes or b.shape != W.shape[:2]:
            raise ValueError(
                f"W must be [{n_prefixes}, {vocab}, d] and b [{n_prefixes}, {vocab}] for "
                f"length {self.length}, got W {W.shape} and b {b.shape}"
            )
        object.__setattr__(self, "W", W)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "correct", check_correct_mask(self.correct, vocab**self.length))

    @classmethod
    def random(cls, vocab: int, length: int, dim: int, rng: np.random.Generator) -> "SequencePolicy":
        """Gaussian heads; a sequence is correct when its tokens sum to 0 modulo the vocabulary."""
        n_prefixes = sum(vocab**t for t in range(length))
        seqs = np.array(list(itertools.product(range(vocab), repeat=length)))
        return cls(
            rng.standard_normal((n_prefixes, vocab, dim)),
            rng.standard_normal((n_prefixes, vocab)),
            length,
            seqs.sum(axis=1) % vocab == 0,
        )

    @property
    def vocab(self) -> int:
        return self.W.shape[1]

    @property
    def dim(self) -> int:
        return self.W.shape[2]

    @cached_property
    def sequences(self) -> np.ndarray:
        """All V^L sequences [V^L, L] in lexicographic order (the order of `probs`)."""
        return np.array(list(itertools.product(range(self.vocab), repeat=self.length)))

    @cached_property
    def prefix_index(self) -> np.ndarray:
        """[V^L, L]: index of the head used at step t of each sequence (prefixes by length, then lexicographic)."""
        seqs, V = self.sequences, self.vocab
        index = np.zeros(seqs.shape, dtype=int)
        for t in range(self.length):
            offset = sum(V**j for j in range(t))
            index[:, t] = offset + (seqs[:, :t] @ (V ** np.arange(t - 1, -1, -1)) if t else 0)
        return index

    def step_log_probs(self, theta) -> np.ndarray:
        """log softmax(W[h] theta + b[h]) for every head h: theta [..., d] -> [..., P, V]."""
        return log_softmax(np.einsum("pvd,...d->...pv", self.W, self.check_theta(theta)) + self.b, axis=-1)

    def log_probs(self, theta) -> np.ndarray:
        """log P(y) = sum_t log pi(y_t | y_<t) for all sequences: theta [..., d] -> [..., V^L]."""
        step = self.step_log_probs(theta)
        return step[..., self.prefix_index, self.sequences].sum(axis=-1)

    def probs(self, theta) -> np.ndarray:
        """P(y) for all V^L sequences: theta [..., d] -> [..., V^L]."""
        return np.exp(self.log_probs(theta))

    def prefix_probs(self, theta) -> np.ndarray:
        """P(h) for every prefix h (the empty prefix has probability 1), one theta [d] -> [P]."""
        step = np.exp(self.step_log_probs(self.check_single_theta(theta)))
        V = self.vocab
        out = np.ones(self.W.shape[0])
        for t in range(1, self.length):  # prefixes of length t extend those of length t - 1
            parents = np.arange(sum(V**j for j in range(t - 1)), sum(V**j for j in range(t)))
            children = (out[parents, None] * step[parents]).reshape(-1)
            start = sum(V**j for j in range(t))
            out[start : start + children.size] = children
        return out

    def fisher(self, theta) -> np.ndarray:
        """Chain rule: I = sum_h P(h) W_h^T (diag pi_h - pi_h pi_h^T) W_h, one theta [d] -> [d, d]."""
        theta = self.check_single_theta(theta)
        pi = np.exp(self.step_log_probs(theta))  # [P, V]
        centred = self.W - np.einsum("pv,pvd->pd", pi, self.W)[:, None]  # [P, V, d]
        return np.einsum("p,pv,pvd,pve->de", self.prefix_probs(theta), pi, centred, centred)

    def sequence_scores(self, theta) -> np.ndarray:
        """s(y) = grad log P(y) = sum_t W_h^T (e_{y_t} - pi_h), h = y_<t, for all sequences: [V^L, d]."""
        theta = self.check_single_theta(theta)
        pi = np.exp(self.step_log_probs(theta))
        step_scores = self.W - np.einsum("pv,pvd->pd", pi, self.W)[:, None]  # [P, V, d]
        return step_scores[self.prefix_index, self.sequences].sum(axis=1)

    def fisher_enumerated(self, theta) -> np.ndarray:
        """I = sum_y P(y) s(y) s(y)^T over all V^L sequences, one theta [d] -> [d, d]."""
        scores = self.sequence_scores(theta)
        return scores.T @ (self.probs(theta)[:, None] * scores)

    def success_grad(self, theta) -> np.ndarray:
        """grad p = sum_{y correct} P(y) s(y), one theta [d] -> [d]."""
        scores = self.sequence_scores(theta)
        return (self.probs(theta)[self.correct, None] * scores[self.correct]).sum(axis=0)
