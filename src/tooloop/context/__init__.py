"""Context-window management: token counting, and policies that decide what each request carries."""

from .policy import DEFAULT_CONTEXT_WINDOW, ContextPolicy
from .strategies import Budget, CustomStrategy, Strategy, middle_out, oldest_first, recent_turns
from .summary import SUMMARY_PREFIX, Summarize, is_summary, summarize
from .tokens import EstimateCounter, FunctionCounter, TiktokenCounter, TokenCounter, counter_for

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "SUMMARY_PREFIX",
    "Budget",
    "ContextPolicy",
    "CustomStrategy",
    "EstimateCounter",
    "FunctionCounter",
    "Strategy",
    "Summarize",
    "TiktokenCounter",
    "TokenCounter",
    "counter_for",
    "is_summary",
    "middle_out",
    "oldest_first",
    "recent_turns",
    "summarize",
]
