"""A live shell pane: one episode's commands and output, drawn line by line (Textual's Line API).

Only lines the buffer reports as changed are re-rendered; rendered lines are cached as strips,
so following a fast stream costs one Text->Strip conversion per new line, not per frame.
"""

from __future__ import annotations

from rich.segment import Segment
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from trsi_tui.live import PaneState
from trsi_tui.safe_text import markup


class ShellPane(ScrollView, can_focus=True):
    def __init__(self, pane: PaneState, **kwargs) -> None:
        super().__init__(**kwargs)
        self.pane = pane
        self._strips: dict[int, Strip] = {}  # line index -> the whole line, rendered
        self._shown: dict[int, tuple[tuple, Strip]] = {}  # line index -> (crop key, cropped strip)
        self._base_style = None  # rich_style walks the DOM; computed once per render pass
        self.lines_drawn = 0  # lines rendered into strips (bench/tui.py reads this)
        self.follow = True  # stick to the newest output until the user scrolls up

    @property
    def episode_id(self) -> str:
        return self.pane.episode_id

    def on_mount(self) -> None:
        self.pane.buffer.take_dirty()  # a fresh widget draws everything anyway
        self.sync(force=True)

    def sync(self, force: bool = False) -> None:
        """Take the buffer's changes: invalidate changed lines, follow the tail, update the title."""
        title = f"{self.pane.task} · {self.pane.agent}" + (f" @ {self.pane.node}" if self.pane.node else "")
        self.border_title = markup(title)  # task and agent names are untrusted text
        self._show_subtitle()
        for outcome in ("running", "passed", "failed", "infra"):
            self.set_class(outcome == self.pane.outcome, f"-{outcome}")
        buffer = self.pane.buffer
        dirty = buffer.take_dirty()
        if dirty is None or force:
            self._strips.clear()
            self._shown.clear()
            self.refresh()
        else:
            top = int(self.scroll_y)
            for index in dirty:
                self._strips.pop(index, None)
                self._shown.pop(index, None)
                if top <= index < top + self.size.height:
                    self.refresh_line(index - top)
        self._grow(Size(buffer.width, buffer.line_count))
        if self.follow:
            self._to_tail()
        self._forget_far_lines()

    def _to_tail(self) -> None:
        self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)

    def on_resize(self) -> None:
        # A new size (focus, a scrollbar shown, the grid laid out again) moves the tail.
        if self.follow:
            self.call_after_refresh(self._follow_tail)

    def _follow_tail(self) -> None:
        # Asked for before the refresh: a key the user pressed meanwhile (page up just after
        # focusing the pane) may have stopped following, and must not be undone.
        if self.follow:
            self._to_tail()

    def _forget_far_lines(self) -> None:
        """Keep rendered strips only for lines near the view.

        A strip carries several caches of its own; kept for every line a pane ever showed, they
        were most of the app's objects, and the collector's full passes over them stalled the
        screen for 100-250 ms at a time.
        """
        height = max(self.size.height, 1)
        if len(self._strips) + len(self._shown) <= 6 * height:
            return
        top = int(self.scroll_y)
        low, high = top - height, top + 2 * height
        for cache in (self._strips, self._shown):
            for index in [i for i in cache if not low <= i < high]:
                del cache[index]

    def _grow(self, size: Size) -> None:
        """Take the buffer's new size without laying the screen out again.

        Setting `virtual_size` re-lays-out the whole screen; a streaming pane did that on every
        frame. Only a scrollbar appearing or going changes the layout, so only that asks for one.
        """
        if size == self.virtual_size:
            return
        bars = (self.show_horizontal_scrollbar, self.show_vertical_scrollbar)
        self.set_reactive(ShellPane.virtual_size, size)
        self._scroll_update(size)  # scrollbars and scroll offsets, as a layout pass would
        if (self.show_horizontal_scrollbar, self.show_vertical_scrollbar) != bars:
            self.refresh(layout=True)

    # Keys and the wheel that scroll up stop following at once, not when the scroll lands: paging
    # is animated, and a tail-follow queued before the key (the resize focusing a pane causes)
    # ran before the animation's first step and snapped the view back to the end.
    def action_page_up(self) -> None:
        self._leave_tail()
        super().action_page_up()

    def action_scroll_up(self) -> None:
        self._leave_tail()
        super().action_scroll_up()

    def action_scroll_home(self) -> None:
        self._leave_tail()
        super().action_scroll_home()

    def _on_mouse_scroll_up(self, event) -> None:
        if not (event.ctrl or event.shift):  # those scroll sideways
            self._leave_tail()
        super()._on_mouse_scroll_up(event)

    def _leave_tail(self) -> None:
        if self.allow_vertical_scroll and self.max_scroll_y > 0:
            self.follow = False
            self._show_subtitle()

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if new >= self.max_scroll_y:  # at the end (also when a resize clamps the offset): follow
            self.follow = True
        elif new < old:  # the user scrolled up: stop following until they return to the end
            self.follow = False
        self._show_subtitle()

    def _show_subtitle(self) -> None:
        # Only the focused pane has a scrollbar: the border says when a pane is not at its tail.
        self.border_subtitle = self.pane.verdict + ("" if self.follow else " · scrolled back (end: follow)")

    def render_lines(self, crop):
        self._base_style = self.rich_style
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        style = self._base_style if self._base_style is not None else self.rich_style
        if index >= self.pane.buffer.line_count:
            return Strip.blank(width, style)
        key = (scroll_x, width, style)
        shown = self._shown.get(index)
        if shown is not None and shown[0] == key:
            return shown[1]
        strip = self._strips.get(index)
        if strip is None:
            text = self.pane.buffer.lines[index]
            segments = [s for s in text.render(self.app.console, end="") if s.text]
            strip = Strip(segments or [Segment("")], text.cell_len)
            self._strips[index] = strip
            self.lines_drawn += 1
        cropped = strip.crop_extend(scroll_x, scroll_x + width, style).apply_style(style)
        self._shown[index] = (key, cropped)
        return cropped
