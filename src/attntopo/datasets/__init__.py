"""Labelled texts that are really there, offline, for trying topological features on real tasks.

>>> from attntopo.datasets import fortunes, minimal_pairs
>>> texts, labels = fortunes(categories=["science", "food"], n_per_category=50)  # Debian's
>>> pairs = minimal_pairs(n_per_phenomenon=200)                        # 7 x 200 pairs

``fortunes``            human-written short texts with their category (Debian's ``fortunes``
                        package, read at run time, never copied)
``generated_vs_human``  fortunes next to SmolLM2's continuations of their first words (cached)
``hallucination_qa``    context questions about countries answered by SmolLM2, labelled
                        faithful or hallucinated from the answers (cached)
``minimal_pairs``       acceptable / unacceptable sentence pairs from attntopo's templates
``read_texts``          your own labelled texts from CSV or JSON Lines

Every loader takes ``file=`` to read your own CSV/JSONL instead; errors name file and line.
"""

from ._files import read_texts
from ._fortunes import FORTUNES_DIR, fortune_categories, fortunes
from ._generated import generated_vs_human
from ._hallucination import HallucinationQA, hallucination_qa
from ._pairs import PHENOMENA, MinimalPairs, minimal_pairs
from ._types import TextDataset

__all__ = [
    "FORTUNES_DIR",
    "HallucinationQA",
    "PHENOMENA",
    "MinimalPairs",
    "TextDataset",
    "fortune_categories",
    "fortunes",
    "generated_vs_human",
    "hallucination_qa",
    "minimal_pairs",
    "read_texts",
]
