"""Speculative drafting: retrieval sources, calibration, reuse, draft trees and acceptance.

Pure algorithms over token ids (no model code): the generation loop calls ``Drafter.propose``
to get a flattened ``DraftTree``, verifies it, picks the accepted path with ``greedy_accept`` or
``sample_accept`` and reports back with ``Drafter.observe``.
"""
from .accept import accepted_sources, greedy_accept, sample_accept
from .calibration import CalibratedTree, CalibrationConfig, CalibrationStats
from .drafter import Drafter, build_history
from .history import DEFAULT_HISTORY_TOKENS, HistoryIndex
from .reuse import ReuseBuffer, ReuseEntry
from .suffix_automaton import Continuation, Matcher, SuffixAutomaton
from .tree import AdaptiveCutoff, Candidate, ConfidenceMap, DraftTree, TreeBuilder, choose_budget, root_only

__all__ = [
    "AdaptiveCutoff", "Candidate", "ConfidenceMap", "CalibratedTree", "CalibrationConfig", "CalibrationStats",
    "Continuation", "DEFAULT_HISTORY_TOKENS", "DraftTree", "Drafter", "HistoryIndex", "Matcher",
    "ReuseBuffer", "ReuseEntry",
    "SuffixAutomaton", "TreeBuilder", "accepted_sources", "build_history", "choose_budget",
    "greedy_accept", "root_only", "sample_accept",
]
