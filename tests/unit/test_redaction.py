"""One redaction function for logs and responses (issue 16 item 10)."""

from __future__ import annotations

import logging

import pytest

from graphmem.redaction import MASK, RedactingFilter, redact, register_secret


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Incorrect header Authorization: Bearer sk-live-abcdef123456", "sk-live-abcdef123456"),
        ("headers {'Authorization': 'Bearer abc.def-ghi_123456'}", "abc.def-ghi_123456"),
        ('{"authorization": "Basic dXNlcjpwYXNzd29yZA=="}', "dXNlcjpwYXNzd29yZA=="),
        ("Proxy-Authorization: token0123456789", "token0123456789"),
        ("using key sk-proj-ABCDEF0123456789", "ABCDEF0123456789"),
        ("GET /v1/models?api_key=qwertyuiop123 failed", "qwertyuiop123"),
        ('{"x-api-key": "zxcvbnm-0987654321"}', "zxcvbnm-0987654321"),
        ("password=hunter2hunter2 user=bob", "hunter2hunter2"),
        ("cannot reach bolt://neo4j:s3cr3t-pw@10.0.0.5:7687 (refused)", "s3cr3t-pw"),
        ("upstream: https://user:p%40ss@llm.example/v1", "p%40ss"),
    ],
)
def test_secret_shaped_text_is_masked(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out and MASK in out, out


def test_registered_secrets_are_masked_wherever_they_appear() -> None:
    register_secret("plain-looking-value-481516")
    register_secret("abc")  # too short to register: would mangle ordinary words
    out = redact("the key plain-looking-value-481516 (abc) was refused")
    assert out == "the key *** (abc) was refused"


def test_ordinary_text_is_left_alone() -> None:
    text = "no note with id 'turn-1' in this scope; k must be an integer from 1 to 100"
    assert redact(text) == text


def test_the_log_filter_redacts_messages_arguments_and_tracebacks() -> None:
    register_secret("filter-secret-2718281828")
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "failed: %s", ("filter-secret-2718281828",), None)
    try:
        raise RuntimeError("boom with filter-secret-2718281828")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    assert RedactingFilter().filter(record)
    formatted = logging.Formatter().format(record)
    assert "filter-secret-2718281828" not in formatted and "failed: ***" in formatted and "boom with ***" in formatted
