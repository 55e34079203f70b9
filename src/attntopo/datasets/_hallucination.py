"""An offline hallucination benchmark: context questions answered by the packaged SmolLM2.

Each prompt is a context of 1 to 30 country descriptions (facts from ``countryinfo``, see
``_facts.py``) and a question about one of them, in the model's chat template; in a share of
the contexts the asked fact is another country's (counterfactual).  The model answers greedily
(eager attention), and each answer is labelled from its text: faithful (the context's value),
hallucinated (another value of the same kind, the world's value, or none) or ambiguous (the
context's value and another).

Generation is slow on a CPU (1.4 s an answer at 80 prompt tokens to 16 s at 1,000 on a
shared 2-core machine, 5.2 s on average), so answers are cached, one
JSON line per pair, with each answer token's log-probability and entropy.  A prompt depends
only on its index and the seed, so the cache key leaves ``n`` out: asking for fewer pairs reads
the first ones of a longer run, and a run cut short resumes where it stopped (the cache is
written in chunks of :data:`CHUNK` pairs, each after every answer).  The cache is looked up
first in the copy packaged with attntopo (``attntopo/data``), then in the user cache
(``$ATTNTOPO_CACHE_DIR/datasets`` or the user cache folder).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .._progress import ProgressOption, make_reporter
from .._validation import check_bool, check_nonneg_int, check_number, check_positive_int
from ..errors import InvalidInputError, MissingDependencyError
from ..io import atomic_write_text
from ._facts import QUESTIONS, context_question, countries, fact_base_digest, label_answer
from ._generated import _cache_folder

__all__ = ["hallucination_qa", "HallucinationQA", "HALLUCINATION_VERSION", "CHUNK"]

#: Bump when prompts, generation or the stored fields change (it is part of the cache key).
HALLUCINATION_VERSION = 1
#: Pairs per cache file.
CHUNK = 50
#: Context sizes (entities) used in turn: index ``i`` gets ``LENGTHS[i % len(LENGTHS)]``.
LENGTHS = (1, 2, 4, 8, 16, 30)
_PACKAGED = Path(__file__).resolve().parent.parent / "data"

_COLUMNS = (
    "entity",
    "question",
    "n_entities",
    "position",
    "counterfactual",
    "context_value",
    "world_value",
    "prompt_tokens",
    "answer_tokens",
    "truncated",
    "mean_logprob",
    "min_logprob",
    "mean_entropy",
    "seconds",
    "outcome",
)


@dataclass(frozen=True, eq=False, repr=False)
class HallucinationQA:
    """(prompt, answer) pairs of a real model with computed labels and generation statistics.

    Attributes
    ----------
    prompts : list of str
        Each prompt exactly as the model saw it (chat template applied, ending where the
        assistant's turn begins).
    answers : list of str
        The model's greedy answers (special tokens removed, surrounding whitespace stripped).
    labels : list of str
        ``"faithful"``, ``"hallucinated"`` or ``"ambiguous"`` (see :func:`hallucination_qa`).
    columns : dict of str to ndarray
        One value per pair: ``entity`` (the country asked about; group by it), ``question``
        (``"capital"`` or ``"currency"``), ``n_entities`` (countries in the context),
        ``position`` (the asked one's place in the context), ``counterfactual`` (bool),
        ``context_value`` (the faithful answer), ``world_value`` (the fact base's),
        ``prompt_tokens``, ``answer_tokens`` (generated tokens before the end of turn),
        ``truncated`` (the token budget ran out before the end of turn), ``mean_logprob``,
        ``min_logprob`` (natural log, over the answer tokens), ``mean_entropy`` (nats, of the
        next-token distribution at each answer token), ``seconds`` (wall time of the
        generation) and ``outcome`` (``"context"``, ``"world"``, ``"other"``, ``"none"`` or
        ``"both"``: what the answer holds).
    token_logprobs, token_entropies : list of ndarray
        Per answer token (end of turn excluded), float64.
    info : dict
        Settings, the cache files read, counts.
    """

    prompts: list[str]
    answers: list[str]
    labels: list[str]
    columns: dict[str, np.ndarray]
    token_logprobs: list[np.ndarray]
    token_entropies: list[np.ndarray]
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.prompts)

    def __repr__(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in self.counts().items())
        where = f"; {self.info['model']}, seed {self.info['seed']}" if "model" in self.info else ""
        return f"HallucinationQA({len(self)} pairs: {counts or 'none'}{where})"

    def pairs(self) -> list[tuple[str, str]]:
        """``(prompt, answer)`` pairs, as :func:`attntopo.features` takes them."""
        return list(zip(self.prompts, self.answers))

    @property
    def y(self) -> np.ndarray:
        """1 where hallucinated, 0 where faithful, -1 where ambiguous (int array)."""
        m = {"faithful": 0, "hallucinated": 1, "ambiguous": -1}
        return np.array([m[v] for v in self.labels], dtype=int)

    @property
    def groups(self) -> np.ndarray:
        """An integer per asked entity (pairs about one country stay on one side of a split)."""
        return np.unique(self.columns["entity"], return_inverse=True)[1]

    def counts(self) -> dict[str, int]:
        """Pairs per label."""
        values, counts = np.unique(np.asarray(self.labels, dtype=str), return_counts=True)
        return {str(v): int(c) for v, c in zip(values, counts)}

    def subset(self, keep: Sequence[int] | np.ndarray) -> HallucinationQA:
        """The pairs at ``keep`` (indices or a boolean mask), in that order."""
        arr, n = np.asarray(keep), len(self)
        if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "biu"):
            raise InvalidInputError(
                f"keep must be integer indices or a boolean mask (1-D), got {arr.dtype} of "
                f"shape {arr.shape}"
            )
        if arr.dtype == bool:
            if arr.size != n:
                raise InvalidInputError(f"keep is a mask of {arr.size} values for {n} pairs")
            arr = np.flatnonzero(arr)
        idx = arr.astype(int)
        wrong = idx[(idx < -n) | (idx >= n)]
        if wrong.size:
            raise InvalidInputError(f"keep must hold indices in [-{n}, {n}), got {wrong[0]}")
        return HallucinationQA(
            [self.prompts[i] for i in idx],
            [self.answers[i] for i in idx],
            [self.labels[i] for i in idx],
            {k: v[idx] for k, v in self.columns.items()},
            [self.token_logprobs[i] for i in idx],
            [self.token_entropies[i] for i in idx],
            dict(self.info),
        )

    def binary(self) -> HallucinationQA:
        """The faithful and hallucinated pairs (ambiguous ones dropped)."""
        return self.subset(np.asarray(self.labels) != "ambiguous")

    def summary(self) -> dict[str, np.ndarray]:
        """Columns: ``label``, ``answer`` and every entry of :attr:`columns`."""
        return {
            "label": np.asarray(self.labels, dtype=object),
            "answer": np.asarray(self.answers, dtype=object),
            **self.columns,
        }

    def to_pandas(self):
        """A DataFrame with ``prompt``, ``answer``, ``label`` and :attr:`columns`."""
        try:
            import pandas as pd
        except ImportError:
            raise MissingDependencyError("to_pandas needs pandas: pip install pandas") from None
        return pd.DataFrame({"prompt": self.prompts, **self.summary()})


def _plan(
    index: int, seed: int, share: float, lengths: tuple[int, ...], questions: tuple[str, ...]
):
    """What prompt ``index`` asks: the context size cycles fastest, then the question kind;
    whether it is counterfactual is drawn from its own stream."""
    n_entities = lengths[index % len(lengths)]
    question = questions[(index // len(lengths)) % len(questions)]
    counterfactual = bool(np.random.default_rng([seed, index, 1]).random() < share)
    return context_question(
        index, seed=seed, n_entities=n_entities, counterfactual=counterfactual, question=question
    )


def _sequence(values: Any) -> tuple:
    """``values`` as a tuple; a string or something that is not a sequence (None) is empty,
    for the caller to refuse in its own words."""
    if isinstance(values, (str, bytes)):
        return ()
    try:
        return tuple(values)
    except TypeError:
        return ()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _read_rows(path: Path, opener=open) -> dict[int, dict]:
    """Rows by index from a cache file; an unreadable file or line is skipped (regenerated)."""
    rows: dict[int, dict] = {}
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(row, dict) and isinstance(row.get("i"), int):
                    rows[row["i"]] = row
    except (OSError, UnicodeDecodeError, EOFError):
        return {}
    return rows


class _LM:
    """The tokenizer and the causal LM (eager attention), each loaded once per process."""

    _tokenizers: dict[str, Any] = {}
    _models: dict[str, Any] = {}

    @classmethod
    def _folder(cls, model_name: str) -> str:
        from ..models import resolve_spec
        from ..models.loading import gguf_converted_folder

        spec = resolve_spec(model_name)
        return str(gguf_converted_folder(spec)) if spec.is_gguf else spec.path

    @classmethod
    def tokenizer(cls, model_name: str):
        if model_name not in cls._tokenizers:
            from transformers import AutoTokenizer

            cls._tokenizers[model_name] = AutoTokenizer.from_pretrained(cls._folder(model_name))
        return cls._tokenizers[model_name]

    @classmethod
    def get(cls, model_name: str):
        if model_name not in cls._models:
            from transformers import AutoModelForCausalLM

            lm = AutoModelForCausalLM.from_pretrained(
                cls._folder(model_name), attn_implementation="eager"
            )
            cls._models[model_name] = lm.eval()
        return cls.tokenizer(model_name), cls._models[model_name]


def _end_of_turn(tok, lm) -> list[int]:
    """Token ids that end an answer: ChatML's ``<|im_end|>`` where the vocabulary has it
    (SmolLM2), else the model's generation config's end tokens and the tokenizer's (Llama-3's
    ``<|eot_id|>`` and ``<|end_of_text|>``)."""
    if "<|im_end|>" in tok.get_vocab():
        return [tok.convert_tokens_to_ids("<|im_end|>")]
    ids = getattr(getattr(lm, "generation_config", None), "eos_token_id", None)
    ids = list(ids) if isinstance(ids, (list, tuple)) else [ids]
    ends = [int(i) for i in [*ids, tok.eos_token_id] if i is not None]
    if not ends:
        raise InvalidInputError(
            "the model names no end-of-turn token (no <|im_end|>, no "
            "eos_token_id in its generation config or tokenizer)"
        )
    return list(dict.fromkeys(ends))


def _answers(tok, lm, prompts: list[str], max_new_tokens: int) -> list[dict]:
    """Greedy answers of prompts generated together (left-padded), with per-token
    log-probabilities and entropies; ``seconds`` is the batch's wall time over its size."""
    import torch

    ends = _end_of_turn(tok, lm)
    pad = tok.pad_token_id if tok.pad_token_id is not None else ends[0]
    old_side = tok.padding_side
    tok.padding_side = "left"  # generation continues from the right end
    try:
        enc = tok(prompts, return_tensors="pt", add_special_tokens=False, padding=True)
    finally:
        tok.padding_side = old_side
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = lm.generate(
            **enc,
            do_sample=False,
            max_new_tokens=max_new_tokens,
            eos_token_id=ends if len(ends) > 1 else ends[0],
            pad_token_id=pad,
            return_dict_in_generate=True,
            output_logits=True,
        )
    seconds = time.perf_counter() - t0
    width = enc["input_ids"].shape[1]
    logp_all = torch.log_softmax(torch.stack(out.logits, 1).double(), -1)  # (batch, steps, vocab)
    rows = []
    for b in range(len(prompts)):
        new = out.sequences[b, width:].tolist()
        stop = next((k for k, t in enumerate(new) if t in ends), len(new))
        logp = logp_all[b, :stop]
        chosen = logp[torch.arange(stop), torch.tensor(new[:stop], dtype=torch.long)].numpy()
        entropy = (-(logp.exp() * logp).sum(-1)).numpy()
        rows.append(
            {
                "answer": tok.decode(new[:stop], skip_special_tokens=True).strip(),
                "prompt_tokens": int(enc["attention_mask"][b].sum()),
                "truncated": stop == len(new),
                "tokens": new[:stop],
                "logprobs": [round(float(v), 5) for v in chosen],
                "entropies": [round(float(v), 5) for v in entropy],
                "seconds": round(seconds / len(prompts), 4),
                "batch_seconds": round(seconds, 4),
                "batch": len(prompts),
                "threads": torch.get_num_threads(),
                "load": round(os.getloadavg()[0], 2),
            }
        )
    return rows


def _batch_of(i: int, n_lengths: int, batch_size: int) -> list[int]:
    """The indices generated together with ``i``: those of its block of ``batch_size *
    n_lengths`` prompts that share its context size; fixed by the index, never by ``n``."""
    block = batch_size * n_lengths
    start = i // block * block + i % n_lengths
    return list(range(start, start + block, n_lengths))


def hallucination_qa(
    *,
    n: int = 1200,
    seed: int = 0,
    model: str = "smollm2",
    counterfactual_share: float = 0.5,
    lengths: Sequence[int] = LENGTHS,
    questions: Sequence[str] = tuple(QUESTIONS),
    max_new_tokens: int = 64,
    batch_size: int = 8,
    memory: Any = None,
    generate: bool = True,
    progress: ProgressOption = None,
) -> HallucinationQA:
    """Context questions about countries, answered by a real model, labelled from the answers.

    Prompt ``i`` describes ``lengths[i % len(lengths)]`` countries drawn from ``countryinfo``'s
    fact base (about 30 tokens each: region, capital, currency code, demonym; 1 country makes a
    prompt of about 80 tokens, 30 about 1,000) and asks the capital or the currency code of
    one of them (the kinds alternate every ``len(lengths)`` prompts), in the model's chat
    template.  With probability ``counterfactual_share`` the asked fact in the context is
    another country's value (one that no country of the context has), and the system message
    asks the model to answer from the context.  The model answers greedily with eager
    attention, at most ``max_new_tokens`` tokens.

    Labels are computed from the answer's text (whole words; capitals with case, accents and
    punctuation ignored; currency codes case-sensitive; the asked country's own name masked):
    ``faithful`` when the context's value is there and no other value of that kind (any
    country's capital or code, or the world's value), ``hallucinated`` when the context's
    value is not there (``outcome`` says whether another value, the world's value or none is),
    ``ambiguous`` when both the context's value and another are there.  Ambiguous pairs are
    kept in the dataset with that label (``y`` is -1); :meth:`HallucinationQA.binary` drops
    them, as the evaluation does.

    Parameters
    ----------
    n : int
        Pairs (prompts ``0 .. n-1``); the packaged cache holds the default settings' first
        1,200 (1,197 of them faithful or hallucinated).
    seed : int
        Chooses the countries, the asked one, the counterfactual values.
    model : str
        A causal model alias or folder (the packaged ``"smollm2"`` by default).
    counterfactual_share : float
        Chance that a prompt's context is counterfactual, in [0, 1].
    lengths : sequence of int
        Context sizes in entities, used in turn.
    questions : sequence of str
        Question kinds used in turn: ``"capital"``, ``"currency"``.
    batch_size : int
        Prompts of one context size generated together (left-padded; padding changes the
        float32 arithmetic a little, so it is part of the cache key).  The batch of prompt
        ``i`` is fixed by ``i``: asking for fewer pairs generates whole batches.
    max_new_tokens : int
        Token budget of an answer (a full answer took 6 to 40 in a pilot of 48).
    memory : path or joblib.Memory, optional
        The only cache folder (a folder, or a ``joblib.Memory``'s location) to read and
        write (default: the copy packaged with attntopo, then
        ``$ATTNTOPO_CACHE_DIR/datasets`` or the user cache folder).
    generate : bool
        False: return only the pairs already cached (the first ones, up to the first gap)
        instead of generating the rest.
    progress : None, bool or callable
        A bar or a callback ``callback(done, total, stage)`` during generation.

    Returns
    -------
    HallucinationQA

    Raises
    ------
    InvalidInputError
        A setting out of range (one line naming it).
    MissingDependencyError
        ``countryinfo`` is not installed (``pip install 'attntopo[datasets]'``).
    """
    n = check_positive_int(n, "n", allow_none=False)
    seed = check_nonneg_int(seed, "seed")
    share = check_number(counterfactual_share, "counterfactual_share", lo=0)
    if share > 1:
        raise InvalidInputError(f"counterfactual_share must be in [0, 1], got {share}")
    lengths = _sequence(lengths)
    n_max = len(countries()) - 1
    if not lengths or not all(
        isinstance(v, (int, np.integer)) and 1 <= v <= n_max for v in lengths
    ):
        raise InvalidInputError(
            f"lengths must be a non-empty list of ints in [1, {n_max}], got {lengths!r}"
        )
    lengths = tuple(int(v) for v in lengths)
    questions = (questions,) if isinstance(questions, str) else _sequence(questions)
    bad = [q for q in questions if q not in QUESTIONS]
    if not questions or bad:
        raise InvalidInputError(
            f"questions must be a non-empty list of {sorted(QUESTIONS)}, got {list(questions)!r}"
        )
    max_new_tokens = check_positive_int(max_new_tokens, "max_new_tokens", allow_none=False)
    batch_size = check_positive_int(batch_size, "batch_size", allow_none=False)
    generate = check_bool(generate, "generate")
    key = {
        "version": HALLUCINATION_VERSION,
        "model": model,
        "seed": seed,
        "counterfactual_share": share,
        "lengths": list(lengths),
        "questions": list(questions),
        "max_new_tokens": max_new_tokens,
        "batch_size": batch_size,
        "facts": fact_base_digest(),
    }
    digest = _sha(json.dumps(key, sort_keys=True))
    name = f"hallucination_qa-{digest}"
    folder = _cache_folder(memory) / name
    packaged = _PACKAGED / f"{name}.jsonl.gz"
    rows: dict[int, dict] = {}
    read: list[str] = []
    if memory is None and packaged.exists():
        rows.update(_read_rows(packaged, gzip.open))
        read.append(str(packaged))
    if folder.is_dir():
        for part in sorted(folder.glob("chunk-*.jsonl")):
            rows.update({i: r for i, r in _read_rows(part).items() if i not in rows})
        read.append(str(folder))
    plans: dict[int, Any] = {}
    prompts: dict[int, str] = {}

    def prompt_of(i: int) -> str:
        """The prompt as the chat template writes it; a packaged row carries it (no tokenizer
        needed to read the packaged benchmark), checked against the plan's messages."""
        if i not in prompts:
            plans[i] = _plan(i, seed, share, lengths, questions)
            stored = rows.get(i, {}).get("prompt")
            if isinstance(stored, str) and all(m["content"] in stored for m in plans[i].messages):
                prompts[i] = stored
            else:
                prompts[i] = _LM.tokenizer(model).apply_chat_template(
                    list(plans[i].messages), tokenize=False, add_generation_prompt=True
                )
        return prompts[i]

    missing = [
        i for i in range(n) if i not in rows or rows[i].get("prompt_sha") != _sha(prompt_of(i))
    ]
    if missing and not generate:
        n = missing[0]
        missing = []
    if missing:
        batches = sorted({tuple(_batch_of(i, len(lengths), batch_size)) for i in missing})
        tok, lm = _LM.get(model)
        with make_reporter(progress, description="hallucination_qa") as reporter:
            reporter.add_total(sum(len(b) for b in batches))
            reporter.stage("generating")
            for batch in batches:
                answers = _answers(tok, lm, [prompt_of(i) for i in batch], max_new_tokens)
                for i, row in zip(batch, answers):
                    rows[i] = {"i": i, "prompt_sha": _sha(prompt_of(i)), **row}
                for chunk in sorted({i // CHUNK for i in batch}):
                    _write_chunk(folder, key, chunk, rows)
                reporter.advance(len(batch))
    if n == 0:
        raise InvalidInputError(
            f"no pair of these settings is cached yet ({folder}); pass generate=True"
        )
    prompt_list = [prompt_of(i) for i in range(n)]
    return _assemble(
        [plans[i] for i in range(n)],
        prompt_list,
        [rows[i] for i in range(n)],
        {**key, "n": n, "cache": read or [str(folder)]},
    )


def _pack(n: int, **settings: Any) -> Path:
    """Write the first ``n`` cached pairs of these settings, prompts included, as the gzipped
    JSON Lines that attntopo ships (``attntopo/data/hallucination_qa-<key>.jsonl.gz``): how
    the packaged benchmark is made once the generation has finished."""
    d = hallucination_qa(n=n, generate=False, progress=False, **settings)
    if len(d) < n:
        raise InvalidInputError(f"only {len(d)} of {n} pairs are cached")
    folder = Path(d.info["cache"][-1])
    rows: dict[int, dict] = {}
    for part in sorted(folder.glob("chunk-*.jsonl")):
        rows.update(_read_rows(part))
    lines = [json.dumps({**rows[i], "prompt": d.prompts[i]}, ensure_ascii=False) for i in range(n)]
    target = _PACKAGED / f"{folder.name}.jsonl.gz"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    with gzip.GzipFile(tmp, "wb", mtime=0) as fh:  # mtime 0: the same bytes every time
        fh.write(("\n".join(lines) + "\n").encode("utf-8"))
    os.replace(tmp, target)
    return target


def _write_chunk(folder: Path, key: dict, chunk: int, rows: dict[int, dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    settings = folder / "settings.json"
    if not settings.exists():
        atomic_write_text(settings, json.dumps(key, sort_keys=True) + "\n")
    lines = [
        json.dumps(rows[i], ensure_ascii=False)
        for i in range(chunk * CHUNK, (chunk + 1) * CHUNK)
        if i in rows
    ]
    atomic_write_text(folder / f"chunk-{chunk:05d}.jsonl", "\n".join(lines) + "\n")


def _assemble(plans: list, prompts: list[str], rows: list[dict], info: dict) -> HallucinationQA:
    labels, cols = [], {c: [] for c in _COLUMNS}
    lps, ents = [], []
    for plan, row in zip(plans, rows):
        label, outcome = label_answer(
            row["answer"],
            context_value=plan.context_value,
            world_value=plan.world_value,
            entity=plan.entity,
            question=plan.question,
        )
        lp = np.asarray(row["logprobs"], dtype=float)
        ent = np.asarray(row["entropies"], dtype=float)
        labels.append(label)
        lps.append(lp)
        ents.append(ent)
        values: dict[str, Any] = {
            "entity": plan.entity,
            "question": plan.question,
            "n_entities": len(plan.entities),
            "position": plan.position,
            "counterfactual": plan.counterfactual,
            "context_value": plan.context_value,
            "world_value": plan.world_value,
            "prompt_tokens": row["prompt_tokens"],
            "answer_tokens": len(lp),
            "truncated": row["truncated"],
            "mean_logprob": lp.mean() if len(lp) else np.nan,
            "min_logprob": lp.min() if len(lp) else np.nan,
            "mean_entropy": ent.mean() if len(ent) else np.nan,
            "seconds": row["seconds"],
            "outcome": outcome,
        }
        for c in _COLUMNS:
            cols[c].append(values[c])
    columns = {
        c: np.asarray(v, dtype=object if isinstance(v[0], str) else None) for c, v in cols.items()
    }
    counts = dict(zip(*np.unique(labels, return_counts=True)))
    info = {**info, "counts": {str(k): int(v) for k, v in counts.items()}}
    return HallucinationQA(prompts, [r["answer"] for r in rows], labels, columns, lps, ents, info)
