r"""Child policies: how the children of a draft-tree node are drawn, as objects.

Notation: p = target, q = draft (code says ``target``/``draft``). A node with ``k`` children
draws them from the draft law ``q`` after the node; the *child policy* fixes the joint law
of the ``k`` tokens, and through it the law of the ``j``-th child given the earlier ones
(its *slot law* ``s_j``), which the tree rules test against:

================================  ============  =============================================
class                             shorthand     slot law ``s_j`` / who uses it
================================  ============  =============================================
:class:`IID`                      ``"iid"``     ``s_j = q`` (SpecInfer)
:class:`WithoutReplacement`       ``"wo"``      ``q`` without the earlier siblings' tokens,
                                                renormalised (Sequoia, recursive speculative
                                                decoding); successive sampling
:class:`TopK`                     ``"topk"``    the point mass on the ``j``-th largest entry
                                                of ``q`` (stable order; Medusa/EAGLE engines:
                                                Medusa's candidates are ``TopK`` of the
                                                heads' laws)
:class:`Greedy`                   ``"greedy"``  slot 0: ``q`` (one random draft); slot
                                                ``j >= 1``: the point mass on the ``j``-th
                                                largest entry of ``q`` (greedy drafting, Hu
                                                et al. 2025: top tokens plus a random one)
================================  ============  =============================================

Every engine asks the policy, never its name: Monte Carlo :meth:`ChildPolicy.draw`
(``[R, k]`` tokens from ``[R, V]`` rows), the exact per-node engine
:meth:`ChildPolicy.node_laws` (recursive rejection's accept/residual laws at a node), the
pure tree rules :meth:`ChildPolicy.slot_law`, the enumeration engine
:meth:`ChildPolicy.next_child_law`, the real decoder :meth:`ChildPolicy.torch_draw` and the
decoder validation's importance forcing :meth:`ChildPolicy.force`. A new policy is one
subclass plus :func:`register_child_policy`; the strings are shorthands resolved by
:func:`get_child_policy` at the API boundary only.

Examples
--------
>>> import numpy as np
>>> from spectheory.children import get_child_policy
>>> wo = get_child_policy("wo")
>>> wo, wo.name
(WithoutReplacement(), 'wo')
>>> A, R = wo.node_laws(np.array([[0.5, 0.5]]), np.array([[0.9, 0.1]]), 2)
>>> np.round(A.sum(0) + R, 12).tolist()          # lossless at a node: the target law
[[0.5, 0.5]]
"""

from __future__ import annotations

from .laws import draw_children, node_laws
from .policy import (
    CHILD_POLICIES,
    ChildPolicy,
    _safe_div,  # noqa: F401  (re-exported)
    get_child_policy,
    list_child_policies,
    register_child_policy,
)
from .ranked import Greedy, TopK
from .sampled import IID, WithoutReplacement

__all__ = [
    "ChildPolicy",
    "IID",
    "WithoutReplacement",
    "TopK",
    "Greedy",
    "CHILD_POLICIES",
    "get_child_policy",
    "register_child_policy",
    "list_child_policies",
    "node_laws",
    "draw_children",
]

for _p in (IID(), WithoutReplacement(), TopK(), Greedy()):
    register_child_policy(_p)
