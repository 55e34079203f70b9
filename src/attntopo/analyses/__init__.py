"""Analyses: one module per question a user asks."""

from .text import SUMMARY_STATS, Analysis, analyze

__all__ = ["Analysis", "SUMMARY_STATS", "analyze"]
