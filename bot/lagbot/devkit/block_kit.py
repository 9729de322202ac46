"""Slack's Block Kit limits, checked as Slack checks them: the emulator refuses what Slack would refuse.

`block_errors` returns Slack-style errors (`<problem> [json-pointer:/blocks/i/...]`), empty when valid.
"""

from __future__ import annotations

from typing import Any

# Slack's published limits (docs.slack.dev, Block Kit reference), per surface and element.
MAX_MESSAGE_BLOCKS = 50
MAX_VIEW_BLOCKS = 100
MAX_TEXT = 40_000
MAX_SECTION_TEXT = 3_000
MAX_SECTION_FIELDS = 10
MAX_FIELD_TEXT = 2_000
MAX_HEADER_TEXT = 150
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2_000
MAX_ACTION_ID = 255
MAX_BLOCK_ID = 255
MAX_ACTIONS_ELEMENTS = 25
MAX_CONTEXT_ELEMENTS = 10
MAX_TABLE_ROWS = 100
MAX_TABLE_CELLS = 20
MAX_CONFIRM_TITLE = 100
MAX_CONFIRM_TEXT = 300
MAX_CONFIRM_BUTTON = 30
MAX_PLAIN_INPUT_LABEL = 2_000
BLOCK_TYPES = {"section", "header", "divider", "actions", "context", "image", "rich_text", "table", "input"}


def block_errors(blocks: Any, *, max_blocks: int) -> list[str]:
    """Slack-style errors for a list of blocks (empty when valid): `<problem> [json-pointer:/blocks/i/...]`."""
    if not isinstance(blocks, list):
        return ["must be an array [json-pointer:/blocks]"]
    errors = []
    if len(blocks) > max_blocks:
        errors.append(f"must contain at most {max_blocks} items [json-pointer:/blocks]")
    if sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "table") > 1:
        errors.append("only one table block is allowed per message [json-pointer:/blocks]")
    for i, block in enumerate(blocks):
        errors.extend(_block_errors(block, f"/blocks/{i}"))
    return errors


def _too_long(value: Any, limit: int, where: str) -> list[str]:
    if isinstance(value, str) and len(value) > limit:
        return [f"must be less than {limit + 1} characters [json-pointer:{where}]"]
    return []


def _text_errors(text: Any, limit: int, where: str, *, plain_only: bool = False) -> list[str]:
    if not isinstance(text, dict) or text.get("type") not in ("plain_text", "mrkdwn"):
        return [f"must be a text object [json-pointer:{where}]"]
    if plain_only and text["type"] != "plain_text":
        return [f"must be plain_text [json-pointer:{where}/type]"]
    if not isinstance(text.get("text"), str):
        return [f"must provide a string [json-pointer:{where}/text]"]
    return _too_long(text["text"], limit, f"{where}/text")


def _block_errors(block: Any, where: str) -> list[str]:
    if not isinstance(block, dict) or block.get("type") not in BLOCK_TYPES:
        kind = block.get("type") if isinstance(block, dict) else type(block).__name__
        return [f"unsupported type: {kind} [json-pointer:{where}/type]"]
    errors = _too_long(block.get("block_id"), MAX_BLOCK_ID, f"{where}/block_id")
    kind = block["type"]
    if kind == "section":
        if "text" not in block and "fields" not in block:
            errors.append(f"must provide text or fields [json-pointer:{where}]")
        if "text" in block:
            errors += _text_errors(block["text"], MAX_SECTION_TEXT, f"{where}/text")
        fields = block.get("fields") or []
        if len(fields) > MAX_SECTION_FIELDS:
            errors.append(f"must contain at most {MAX_SECTION_FIELDS} items [json-pointer:{where}/fields]")
        for j, f in enumerate(fields):
            errors += _text_errors(f, MAX_FIELD_TEXT, f"{where}/fields/{j}")
        if "accessory" in block:
            errors += _element_errors(block["accessory"], f"{where}/accessory")
    elif kind == "header":
        errors += _text_errors(block.get("text"), MAX_HEADER_TEXT, f"{where}/text", plain_only=True)
    elif kind == "actions":
        elements = block.get("elements") or []
        if not elements or len(elements) > MAX_ACTIONS_ELEMENTS:
            errors.append(f"must contain 1 to {MAX_ACTIONS_ELEMENTS} items [json-pointer:{where}/elements]")
        for j, element in enumerate(elements):
            errors += _element_errors(element, f"{where}/elements/{j}")
    elif kind == "context":
        elements = block.get("elements") or []
        if not elements or len(elements) > MAX_CONTEXT_ELEMENTS:
            errors.append(f"must contain 1 to {MAX_CONTEXT_ELEMENTS} items [json-pointer:{where}/elements]")
    elif kind == "table":
        errors += _table_errors(block, where)
    return errors


def _element_errors(element: Any, where: str) -> list[str]:
    if not isinstance(element, dict):
        return [f"must be an object [json-pointer:{where}]"]
    errors = _too_long(element.get("action_id"), MAX_ACTION_ID, f"{where}/action_id")
    if element.get("type") == "button":
        errors += _text_errors(element.get("text"), MAX_BUTTON_TEXT, f"{where}/text", plain_only=True)
        errors += _too_long(element.get("value"), MAX_BUTTON_VALUE, f"{where}/value")
        if element.get("style") not in (None, "primary", "danger"):
            errors.append(f"must be primary or danger [json-pointer:{where}/style]")
        confirm = element.get("confirm")
        if confirm is not None:
            errors += _text_errors(confirm.get("title"), MAX_CONFIRM_TITLE, f"{where}/confirm/title", plain_only=True)
            errors += _text_errors(confirm.get("text"), MAX_CONFIRM_TEXT, f"{where}/confirm/text")
            errors += _text_errors(
                confirm.get("confirm"), MAX_CONFIRM_BUTTON, f"{where}/confirm/confirm", plain_only=True
            )
            errors += _text_errors(confirm.get("deny"), MAX_CONFIRM_BUTTON, f"{where}/confirm/deny", plain_only=True)
    return errors


def _table_errors(block: dict[str, Any], where: str) -> list[str]:
    rows = block.get("rows")
    if not isinstance(rows, list) or not rows:
        return [f"must provide rows [json-pointer:{where}/rows]"]
    errors = []
    if len(rows) > MAX_TABLE_ROWS:
        errors.append(f"must contain at most {MAX_TABLE_ROWS} items [json-pointer:{where}/rows]")
    for r, row in enumerate(rows):
        if not isinstance(row, list) or len(row) > MAX_TABLE_CELLS:
            errors.append(f"must contain at most {MAX_TABLE_CELLS} items [json-pointer:{where}/rows/{r}]")
            continue
        for c, cell in enumerate(row):
            if not isinstance(cell, dict) or cell.get("type") not in ("raw_text", "raw_number", "rich_text"):
                errors.append(f"must be raw_text, raw_number or rich_text [json-pointer:{where}/rows/{r}/{c}/type]")
            elif cell["type"] == "raw_text" and not (isinstance(cell.get("text"), str) and cell["text"]):
                errors.append(f"must be more than 0 characters [json-pointer:{where}/rows/{r}/{c}/text]")
    return errors
