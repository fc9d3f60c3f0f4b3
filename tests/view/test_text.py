"""Terminal text made readable: colour codes, redraws, control bytes, bidi overrides."""

from __future__ import annotations

from evoround.view._text import cap_parts, parts, plain, visible


def test_colours_become_fixed_classes_and_other_escapes_go() -> None:
    text = (
        "\x1b[1;31mE\x1b[22m rest\x1b[0m \x1b[4;94mlink\x1b[24;39m \x1b]8;;http://x\x1b\\t\x1b[2K"
    )
    assert parts(text) == [
        ("a-red a-b", "E"),
        ("a-red", " rest"),
        ("", " "),
        ("a-blue a-u", "link"),
        ("", " t"),
    ]
    assert plain(text) == "E rest link t"


def test_256_and_rgb_colours_are_skipped_with_their_arguments() -> None:
    assert parts("\x1b[38;2;1;2;3mA\x1b[38;5;9;1mB") == [("", "A"), ("a-b", "B")]


def test_redrawn_lines_show_what_a_terminal_shows() -> None:
    assert plain("a\r\nb 1%\rb 50%\rb 100%\r\nc\r") == "a\nb 100%\nc"
    # a shorter draw overwrites only the start: the earlier text's tail stays visible
    assert plain("E <script> 5%\rdone") == "donecript> 5%"
    assert parts("\x1b[32mok\x1b[0m\n\x1b[31m1%\r\x1b[31m100%\x1b[0m") == [
        ("a-green", "ok"),
        ("", "\n100%"),  # a redrawn line is counted in plain columns: its colour goes
    ]


def test_controls_and_bidi() -> None:
    assert plain("a\x07b\x00c\u202ed") == "abc⟦U+202E⟧d"
    osc = "\x1b]0;title\x07kept \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x07bell"
    assert plain(osc) == "kept link bell"
    assert parts(osc) == [("", "kept link bell")]
    assert visible("a\x1b[0m\tb\x7f\u2066") == "a␛[0m\tb␡⟦U+2066⟧"


def test_cap_keeps_head_and_tail_and_their_colours() -> None:
    segs = [("a-red", "r" * 10), ("", "p" * 10), ("a-green", "g" * 10)]
    out = cap_parts(segs, 10)
    assert out[0] == ("a-red", "rrrrr") and out[-1] == ("a-green", "ggggg")
    assert "20 characters not shown" in out[1][1]
    assert cap_parts(segs, 30) == segs
