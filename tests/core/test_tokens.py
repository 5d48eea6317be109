"""Token counting: QwenPaw's estimator exactly, and real tiktoken encodings loaded offline from a package."""

import json

import pytest

from qwenmem.core.tokens import EstimateCounter, block_tokens, get_counter, message_tokens


def test_estimator_formula_rounds_half_up_on_utf8_bytes():
    c = EstimateCounter(4)
    assert c.count("") == 0
    assert c.count("a") == 0  # int(1/4 + 0.5) = 0
    assert c.count("ab") == 1  # int(0.5 + 0.5)
    assert c.count("abcdef") == 2  # int(1.5 + 0.5)
    assert c.count("数据库") == 2  # 9 bytes → int(2.25 + 0.5)
    assert EstimateCounter(3).count("数据库") == 3


def test_tiktoken_encodings_work_offline_with_known_counts():
    # "hello world" is two tokens in both encodings; CJK differs between them
    assert get_counter("cl100k").count("hello world") == 2
    assert get_counter("o200k").count("hello world") == 2
    assert get_counter("o200k").count("<|endoftext|>") > 1  # special tokens are text, never an error


def test_unknown_tokenizer_is_a_usage_error():
    from qwenmem.core.errors import UsageError

    with pytest.raises(UsageError):
        get_counter("gpt2")


def test_block_rules_follow_qwenpaw():
    c = EstimateCounter(4)
    count = c.count
    tool_input = {"query": "Berlin trip", "max_results": 5}
    assert block_tokens({"type": "tool_use", "name": "memory_search", "input": tool_input}, count) == count(
        "memory_search" + json.dumps(tool_input, ensure_ascii=False))
    assert block_tokens({"type": "tool_result", "output": "x" * 40}, count) == 10
    assert block_tokens({"type": "tool_result", "output": [{"type": "text", "text": "x" * 40},
                                                          {"type": "image", "source": {"type": "base64", "data": "A" * 400}}]},
                        count) == 10 + 100
    assert block_tokens({"type": "image", "source": {"type": "base64", "data": ""}}, count) == 10
    assert block_tokens({"type": "image", "source": {"type": "url", "url": ""}}, count) == 10
    assert block_tokens({"type": "mystery", "text": "x" * 400}, count) == 0


def test_message_tokens_have_no_per_message_overhead():
    c = EstimateCounter(4)
    msg = {"id": "x" * 22, "name": "user", "role": "user", "timestamp": "2026-05-20 09:14:02.381",
           "content": [{"type": "text", "text": "abcdefgh"}, {"type": "thinking", "thinking": "abcd"}]}
    assert message_tokens(msg, c) == 2 + 1
    assert message_tokens(dict(msg, content="abcdefgh"), c) == 2
    assert message_tokens(dict(msg, content=None), c) == 0
