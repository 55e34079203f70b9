"""Token labels on the real packaged models: what the model saw,
readable and unique (issue 15, item 3)."""

from __future__ import annotations

import warnings

import pytest

import attntopo as at
from attntopo.attention import NEWLINE_MARK, SPACE_MARK
from attntopo.errors import UnknownTokensWarning

pytestmark = pytest.mark.slow


def _unknown_warnings(fn):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = fn()
    return out, [w for w in rec if issubclass(w.category, UnknownTokensWarning)]


@pytest.mark.parametrize("call", ["tokenize", "attention", "analyze"])
def test_the_unknown_tokens_warning_points_at_the_callers_line(minilm, call):
    """Whatever path of attntopo's own calls leads to the tokenizer, the warning names the
    user's line (a fixed stacklevel pointed into attntopo once a wrapper was added)."""
    import attntopo as at

    fn = {
        "tokenize": lambda: minilm.tokenize("a 🍕"),
        "attention": lambda: minilm.attention("a 🍕"),
        "analyze": lambda: at.analyze("a 🍕", model=minilm, layers=0, heads=0),
    }[call]
    _, rec = _unknown_warnings(fn)
    assert len(rec) == 1 and rec[0].filename == __file__, [(w.filename, w.lineno) for w in rec]


def test_minilm_unknown_tokens_are_shown_and_warned(minilm):
    text = "I love 🍕 and 猫"
    att, rec = _unknown_warnings(lambda: minilm.attention(text))
    # the tokens stay exactly the tokenizer's
    assert att.tokens == minilm.tokenizer.convert_ids_to_tokens(att.token_ids.tolist())
    unk = [i for i, t in enumerate(att.token_ids) if t == minilm.tokenizer.unk_token_id]
    assert len(unk) == 2
    assert "[UNK]" in att.labels and [att.labels[i] for i in unk] == ["[UNK]", "[UNK]#2"]
    assert [att.sources[i] for i in unk] == ["🍕", "猫"]
    assert att.labels[1:3] == ["I", "love"] and att.sources[0] == att.sources[-1] == ""
    assert len(rec) == 1, [str(w.message) for w in rec]
    w = rec[0].message
    assert (
        w.count == 2
        and w.examples == ["🍕", "猫"]
        and w.unk_token == "[UNK]"
        and w.model == "minilm"
    )
    assert str(w).startswith("2 tokens of the text became [UNK] ('🍕', '猫')")
    assert rec[0].filename == __file__  # points at the caller
    # a list of texts warns once, with the total
    _, rec = _unknown_warnings(lambda: minilm.attention([text, "no pizza here", "猫"]))
    assert len(rec) == 1 and rec[0].message.count == 3
    # tokenize() warns the same; a text the vocabulary covers does not warn
    _, rec = _unknown_warnings(lambda: minilm.tokenize(text))
    assert len(rec) == 1 and rec[0].message.count == 2
    _, rec = _unknown_warnings(lambda: minilm.attention("Quantum information theory"))
    assert rec == []


@pytest.mark.smollm2
@pytest.mark.xdist_group("smollm2")
def test_smollm2_labels_are_decoded_and_unique(smollm2):
    text = "🍕🍕 П П\nnext"
    att, rec = _unknown_warnings(lambda: smollm2.attention(text))
    assert rec == []  # byte-level BPE has no unknown tokens
    assert att.tokens == smollm2.tokenizer.convert_ids_to_tokens(att.token_ids.tolist())
    assert "Ċ" in att.tokens and any("Ġ" in t for t in att.tokens)  # the raw tokens keep them
    labels = att.labels
    assert len(set(labels)) == len(labels) == att.n_tokens
    assert not any(ch in lab for lab in labels for ch in "ĠĊ"), labels
    assert labels[att.tokens.index("Ċ")] == NEWLINE_MARK and labels[-1] == "next"
    assert labels[:3] == ["🍕(1/3)", "🍕(2/3)", "🍕(3/3)"] and labels[6] == SPACE_MARK + "П(1/2)"
    # cross-check with the tokenizer's own decoding of each token that holds whole characters
    tok = smollm2.tokenizer
    for t, lab in zip(att.tokens, labels):
        s = tok.convert_tokens_to_string([t])
        if "\ufffd" not in s:
            assert lab.split("#")[0] == s.replace("\n", NEWLINE_MARK).replace(" ", SPACE_MARK), (
                t,
                lab,
            )


@pytest.mark.smollm2
@pytest.mark.xdist_group("smollm2")
def test_smollm2_words_get_a_space_mark(smollm2):
    att = smollm2.attention("The cat sat on the mat.\n")
    assert att.labels == ["The", "·cat", "·sat", "·on", "·the", "·mat", ".", "↵"]
    att = smollm2.attention("the cat and the dog and the bird")
    assert att.labels.count("·the") == 1 and "·the#2" in att.labels and "·and#2" in att.labels


def test_labels_survive_save_and_load(minilm, tmp_path):
    text = "I love 🍕 and 猫, and the cat loves the dog"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownTokensWarning)
        an = at.analyze(text, model=minilm, layers=[0], heads=[0], maxdim=0)
    an.save(tmp_path / "r")
    back = at.load_result(tmp_path / "r")
    assert back.attention.labels == an.attention.labels
    assert back.attention.sources == an.attention.sources
    assert "[UNK]#2" in back.attention.labels and "the#2" in back.attention.labels


def test_timeline_labels_are_the_attention_labels(minilm):
    text = "the cat and the 猫 saw the dog"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownTokensWarning)
        tl = at.timeline(text, model=minilm, layers=0, heads=0, maxdim=0)
        full = minilm.attention(text)
    assert tl.labels == full.labels and "the#3" in tl.labels and "[UNK]" in tl.labels
    assert tl.slices[-1].labels == full.labels
