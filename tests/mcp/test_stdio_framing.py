"""Each message ``noon serve`` writes on pipes is framed in the very bytes of the SDK's stdio
writer (noon.mcp.stdio_pipes.framed): ``model_dump_json(by_alias=True, exclude_unset=True)``,
encoded, and a newline; answers by orjson, everything else by pydantic's serializer."""

from __future__ import annotations

from typing import Any

import mcp_types
from hypothesis import given, settings
from hypothesis import strategies as st

from noon.mcp.stdio_pipes import framed


def sdk_line(message: mcp_types.JSONRPCMessage) -> bytes:
    """What the SDK's stdio writer writes for ``message``."""
    return (message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode("utf-8")


def answer(result: dict[str, Any], request_id: int | str = 3) -> mcp_types.JSONRPCResponse:
    return mcp_types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)


def test_every_kind_of_message_is_framed_as_the_sdk_frames_it() -> None:
    text = 'é \u2028 "q" \\ / \n \t \x00 \x1f \x7f \ufeff 🌍'
    messages: list[mcp_types.JSONRPCMessage] = [
        answer({"content": [{"type": "text", "text": text}], "n": 1.5, "big": 2**64 - 1}),
        answer({}, "x"),
        mcp_types.JSONRPCError(  # its unset ``data`` left out, as exclude_unset leaves it
            jsonrpc="2.0", id="x", error=mcp_types.ErrorData(code=-32602, message="bad ü")
        ),
        mcp_types.JSONRPCNotification(
            jsonrpc="2.0", method="notifications/resources/updated", params={"uri": "noon://a"}
        ),
        mcp_types.JSONRPCRequest(jsonrpc="2.0", id=9, method="ping"),
    ]
    assert [framed(m) for m in messages] == [sdk_line(m) for m in messages]


def test_what_orjson_refuses_is_framed_by_pydantic() -> None:
    class Tagged(str):
        pass

    for odd in (2**70, -(2**64), Tagged("a str subclass")):
        message = answer({"value": odd, "list": [odd]})
        assert framed(message) == sdk_line(message)


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=400)
@given(result=st.dictionaries(st.text(), _json, max_size=5), request_id=st.integers() | st.text())
def test_any_answer_is_framed_in_the_sdk_writers_bytes(
    result: dict[str, Any], request_id: int | str
) -> None:
    message = answer(result, request_id)
    assert framed(message) == sdk_line(message)
