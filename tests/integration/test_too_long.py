"""A text longer than the model's context: one typed error with numbers, no third-party lines
(issue 15, item 5)."""

from __future__ import annotations

import logging
import pickle

import pytest

from attntopo.errors import InvalidInputError, TextTooLongError

pytestmark = pytest.mark.slow

TEXT = "x. " * 300  # 602 MiniLM tokens; MiniLM takes 512
# transformers' own line, logged once per tokenizer ("Token indices sequence length is longer ...")
HF_LINE = "Token indices sequence length"
_ONCE_KEY = "sequence-length-is-longer-than-the-specified-maximum"


def test_error_has_numbers_and_names_no_interface(minilm):
    with pytest.raises(TextTooLongError) as e:
        minilm.attention(TEXT)
    err = e.value
    assert (err.n_tokens, err.limit, err.model) == (602, 512, "minilm")
    assert isinstance(err, InvalidInputError) and isinstance(err, ValueError)
    msg = str(err)
    assert msg == (
        "text has 602 tokens but minilm takes at most 512: shorten it or truncate it to 512 tokens"
    )
    # each interface names its own switch: the Python argument, the CLI flag, the page's checkbox
    assert "truncate=True" not in msg and "--truncate" not in msg and "\n" not in msg
    back = pickle.loads(pickle.dumps(err))  # worker processes hand it back intact
    assert (back.n_tokens, back.limit, back.model, str(back)) == (602, 512, "minilm", msg)
    with pytest.raises(TextTooLongError) as e:
        minilm.forward_ids([list(range(1000, 1600))])
    assert (e.value.n_tokens, e.value.limit) == (600, 512)


@pytest.mark.parametrize("truncate", [False, True])
def test_no_tokenizer_length_line(minilm, capfd, caplog, truncate):
    # transformers prints its line only once per tokenizer:
    # forget that it did, so this test can fail
    minilm.tokenizer.deprecation_warnings.pop(_ONCE_KEY, None)
    caplog.set_level(logging.DEBUG)
    capfd.readouterr()
    if truncate:
        att = minilm.attention(TEXT, truncate=True)
        assert att.n_tokens == 512 and att.truncated
    else:
        with pytest.raises(TextTooLongError):
            minilm.attention(TEXT)
    out, err = capfd.readouterr()
    assert HF_LINE not in out + err
    assert not [r for r in caplog.records if HF_LINE in r.getMessage()]
    with pytest.raises(TextTooLongError):
        minilm.tokenize(TEXT)
    assert HF_LINE not in "".join(capfd.readouterr())
