"""A small HTML reader for the review page tests: the standard library parses HTML but has no
element tree, and the pages are checked by what a reader sees, not by string matching."""

from __future__ import annotations

import re
from html.parser import HTMLParser

VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "track",
    "wbr",
}


class Element:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Element | None) -> None:
        self.tag = tag
        self.attrs = attrs
        self.parent = parent
        self.children: list[Element | str] = []

    def __repr__(self) -> str:
        return f"<{self.tag} {self.attrs}>"

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    @property
    def text(self) -> str:
        """The visible text, whitespace collapsed as a browser would."""
        parts: list[str] = []
        for child in self.children:
            parts.append(child if isinstance(child, str) else child.text)
        return re.sub(r"\s+", " ", "".join(parts)).strip()

    def iter(self):
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.iter()

    def find_all(
        self, tag: str | None = None, *, cls: str | None = None, **attrs: str
    ) -> list[Element]:
        """Descendants by tag, class and attributes (data_id= matches data-id)."""
        wanted = {name.replace("_", "-"): value for name, value in attrs.items()}
        return [
            element
            for element in self.iter()
            if element is not self
            and (tag is None or element.tag == tag)
            and (cls is None or cls in element.classes)
            and all(element.attrs.get(name) == value for name, value in wanted.items())
        ]

    def find(self, tag: str | None = None, *, cls: str | None = None, **attrs: str) -> Element:
        """The first match; fails the test when there is none."""
        found = self.find_all(tag, cls=cls, **attrs)
        assert found, f"no <{tag or '*'} class={cls} {attrs}> in the page"
        return found[0]

    def form_data(self) -> dict[str, str | list[str]]:
        """What a browser would submit from this form without any change by the user."""
        data: dict[str, list[str]] = {}
        for element in self.iter():
            name = element.attrs.get("name")
            if not name or "disabled" in element.attrs:
                continue
            if element.tag == "input":
                kind = element.attrs.get("type", "text")
                if kind in {"submit", "button", "image", "reset", "file"}:
                    continue
                if kind in {"checkbox", "radio"} and "checked" not in element.attrs:
                    continue
                # Without a value a checked box sends "on", any other input "".
                default = "on" if kind in {"checkbox", "radio"} else ""
                data.setdefault(name, []).append(element.attrs.get("value", default))
            elif element.tag == "textarea":
                data.setdefault(name, []).append("".join(map(str, element.children)).lstrip("\n"))
            elif element.tag == "select":
                options = element.find_all("option")
                chosen = [o for o in options if "selected" in o.attrs] or options[:1]
                data.setdefault(name, []).extend(o.attrs.get("value", o.text) for o in chosen)
        return {name: values[0] if len(values) == 1 else values for name, values in data.items()}


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {}, None)
        self.current = self.root

    def handle_starttag(self, tag, attrs):
        element = Element(tag, {name: value or "" for name, value in attrs}, self.current)
        self.current.children.append(element)
        if tag not in VOID:
            self.current = element

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(
            Element(tag, {name: value or "" for name, value in attrs}, self.current)
        )

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def parse(content: bytes | str) -> Element:
    builder = _Builder()
    builder.feed(content.decode() if isinstance(content, bytes) else content)
    builder.close()
    return builder.root


def page_of(response) -> Element:
    """The parsed HTML of a 200 response."""
    assert response.status_code == 200, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("text/html"), response["Content-Type"]
    return parse(response.content)


def messages_of(page: Element) -> list[str]:
    """The texts of the flash messages shown at the top of a page."""
    return [li.text for ul in page.find_all("ul", cls="messages") for li in ul.find_all("li")]


def candidate_ids(page: Element) -> list[str]:
    """The ids of the queue's candidates, in the order shown."""
    return [li.attrs["data-id"] for li in page.find_all("li", cls="candidate")]
