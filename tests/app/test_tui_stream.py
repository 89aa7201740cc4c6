"""How answers appear: the transcript follows a long stream, lets go when the user scrolls up,
keeps line breaks, and the panels describe the request of their own screen. Scripted engine (fast
tier); the real model's run of the same is in test_tui_pilot.py and test_tui_tmux.py."""
from __future__ import annotations

from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownBlock

from app.tui.widgets.panels import Panels
from app.tui.widgets.transcript import Transcript
from support.tui_helpers import SIZE, chat, hash_memory, idle, make_app, ready, send, wait
from support.fakes import FakeEngine

TIPS = "\n".join(f"{i}. Tip number {i}: taste." for i in range(1, 31))
# paragraphs: finished blocks join the transcript while the answer streams (a list with no blank
# line stays in the tail below it until it ends)
PARAGRAPHS = "\n\n".join(f"Tip number {i}: taste as you go." for i in range(1, 31))

def at_end(transcript: Transcript) -> bool:
    return transcript.max_scroll_y > 0 and transcript.scroll_y >= transcript.max_scroll_y - 1


def rendered(view) -> str:
    """The text of a message body as drawn, leaf block by leaf block."""
    blocks = view.query_one(Markdown).query(MarkdownBlock)
    return "\n".join(str(b.render()) for b in blocks if not b.query(MarkdownBlock))


async def test_the_transcript_follows_a_long_answer(tmp_path):
    app = make_app(FakeEngine(PARAGRAPHS, delay=0.01), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        screen = app.screen
        transcript = screen.query_one(Transcript)
        await send(pilot, "List thirty tips for learning to cook.")
        await wait(pilot, lambda: "Tip number 15" in getattr(transcript.last("assistant"), "text", ""))
        await wait(pilot, lambda: at_end(transcript) or screen.active is None, 5, "the end mid-stream")
        assert screen.active is not None, "the answer ended before the transcript was seen at its end"
        await wait(pilot, lambda: idle(screen))
        await wait(pilot, lambda: at_end(transcript), 5, "the transcript at its end after the answer")
        last = transcript.last("assistant")
        assert "Tip number 30: taste as you go." in rendered(last)
        footer = last.query_one(".footer")
        assert transcript.region.contains_region(footer.region), "the figures line is off screen"


async def test_a_list_taller_than_the_tail_shows_its_newest_lines(tmp_path):
    app = make_app(FakeEngine(TIPS, delay=0.01), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        screen = app.screen
        live = screen.query_one("#live")
        await send(pilot, "List thirty tips for learning to cook, one per line.")
        await wait(pilot, lambda: "20. Tip number 20" in str(live.render()) or screen.active is None, 20)
        drawn = str(live.render())
        assert screen.active is not None and "20. Tip number 20" in drawn
        assert "1. Tip number 1:" not in drawn and len(drawn.splitlines()) <= live.max_rows()
        await wait(pilot, lambda: idle(screen))
        assert not live.display
        assert "Tip number 1: taste." in rendered(screen.query_one(Transcript).last("assistant"))  # a Markdown list


async def test_scrolling_up_stops_following_and_the_end_resumes_it(tmp_path):
    app = make_app(FakeEngine(PARAGRAPHS, delay=0.02), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        screen = app.screen
        transcript = screen.query_one(Transcript)
        await send(pilot, "Tips please")
        await wait(pilot, lambda: transcript.max_scroll_y > 5)
        transcript.scroll_home(animate=False, immediate=True)      # what a wheel or PageUp does
        await wait(pilot, lambda: transcript.scroll_y == 0, 5)
        grown = transcript.max_scroll_y
        await wait(pilot, lambda: transcript.max_scroll_y > grown + 3)
        assert transcript.scroll_y == 0, "the stream pulled the reader back down"
        transcript.scroll_end(animate=False, immediate=True)       # back at the end: follow again
        await wait(pilot, lambda: idle(screen))
        await wait(pilot, lambda: at_end(transcript), 5, "following again")


async def test_line_breaks_typed_or_generated_are_kept(tmp_path):
    poem = "Roses are red,\nviolets are blue,\nhexa drafts tokens\nand checks them too."
    app = make_app(FakeEngine(poem), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press(*"first line", "ctrl+j", *"second line", "enter")
        await wait(pilot, lambda: idle(app.screen) and app.screen.request == 1)
        user, reply = app.screen.query_one(Transcript).messages()
        await wait(pilot, lambda: "hexa drafts tokens" in rendered(reply), 5, "the reply drawn")
        assert user.text == "first line\nsecond line"
        assert "first line\nsecond line" in rendered(user)
        assert "Roses are red,\nviolets are blue," in rendered(reply)


async def test_mean_histogram_and_footer_describe_the_same_steps(tmp_path):
    reply = " ".join(f"w{i}" for i in range(150))          # 150 steps: more than the sparkline holds
    app = make_app(FakeEngine(reply), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await chat(pilot, "Go")
        screen = app.screen
        m = screen.metrics
        assert m.steps == 150 and sum(m.histogram.values()) == 150
        footer = str(screen.query_one(Transcript).last("assistant").query_one(".footer").render())
        assert f"{m.mean_accepted:.2f} acc/step" in footer
        await wait(pilot, lambda: f"({m.steps} steps)" in str(screen.query_one("#acc-figures").render()), 5)


async def test_a_chat_during_a_summary_keeps_its_own_figures(tmp_path):
    doc = tmp_path / "note.txt"
    doc.write_text("The meeting moved to Friday at 10am in room 4. Bring the budget report.\n" * 3)
    engine = FakeEngine(" ".join(["summary"] * 40), delay=0.01)
    app = make_app(engine, tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f3")
        summarizer = app.screen
        await wait(pilot, lambda: summarizer.runtime is not None and summarizer.is_current)
        summarizer.summarize([doc])
        await wait(pilot, lambda: summarizer.metrics.steps > 0)
        await pilot.press("f2")
        assistant = app.screen
        engine.reply = "short answer"                       # the chat's own reply: 2 steps
        await wait(pilot, lambda: assistant.runtime is not None)
        await send(pilot, "Hi")
        await wait(pilot, lambda: idle(assistant) and idle(summarizer), 60)
        assert assistant.metrics.steps == 2 and assistant.metrics.done.text == "short answer"
        assert summarizer.metrics.steps in (2, 40)          # its own request, never the sum


async def test_all_three_panels_fit_at_140x40_and_f9_hides_them(tmp_path):
    app = make_app(FakeEngine(), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await chat(pilot, "Hi")
        panels = app.screen.query_one(Panels)
        await wait(pilot, lambda: app.screen.metrics.steps and panels.region.height > 30, 5, "the panels")
        assert panels.display and panels.max_scroll_y == 0, "the Device panel is below the fold"
        await pilot.press("f9")
        assert not panels.display
        await pilot.press("f9")
        assert panels.display


async def test_narrow_terminals_start_without_sidebars(tmp_path):
    app = make_app(FakeEngine(), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        assert not app.screen.query_one(Panels).display
        await pilot.press("f9")
        assert app.screen.query_one(Panels).display


def test_the_tail_wraps_words_into_rows_that_stay_put_as_text_arrives():
    from app.tui.widgets.stream_tail import wrap

    line = "   10. Use a food processor to chop your ingredients, then taste them."
    rows = wrap(line, 20)
    assert rows[0].startswith("   10. ") and all(len(r) <= 20 for r in rows)
    assert " ".join(r.strip() for r in rows) == " ".join(line.split())
    for n in range(len(line)):           # greedy: appending text changes only the last row or two
        stable = max(0, len(wrap(line[:n], 20)) - 2)
        assert wrap(line[:n], 20)[:stable] == rows[:stable]
    assert wrap("x" * 45, 20) == ["x" * 20, "x" * 20, "x" * 5]
    assert all(len(r) <= 6 for r in wrap("漢字" * 10, 7))    # two cells each: 3 per row


async def test_a_streamed_answer_lays_the_screen_out_only_a_few_times(tmp_path):
    """A layout is of the whole screen (15-50 ms here, taken from the engine's cores): while an
    answer streams, the tail grows twice at most and the panels keep their heights, so an answer
    that fits the tail costs a couple of layouts, not one every few lines."""
    answer = "\n".join(f"Line {i}: the answer goes on for a while here." for i in range(1, 15))
    app = make_app(FakeEngine(answer, delay=0.01), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        screen = app.screen
        layouts: list[bool] = []
        original = screen._refresh_layout

        def counting(*args, **kwargs):
            if screen.active is not None and screen.metrics.steps and screen.metrics.done is None:
                layouts.append(screen._layout_required)      # a layout while tokens arrive
            return original(*args, **kwargs)

        screen._refresh_layout = counting
        await send(pilot, "Go on for a while.")
        await wait(pilot, lambda: idle(screen))
        assert screen.metrics.steps > 100
        assert "Line 14: the answer" in rendered(screen.query_one(Transcript).last("assistant"))
    assert sum(layouts) <= 3, f"{sum(layouts)} layouts while the answer streamed"
