"""Text that users and training scripts wrote, made into data for a notification: never markup, never a link.

A job's FailureReason (the script writes /opt/ml/output/failure), its log lines, its tags, its name as CloudTrail
recorded it and an API error's message reach trainguard's notifications. Each channel would read some of it as
instructions:
- the email (SNS's plain-text message) and the chat copy split lines on more than "\\n": Python's
  `str.splitlines`, and chat clients, break on U+2028/U+2029, U+0085, VT, FF and the file separators, so a
  "line" of the text could start a section of its own (a fake "Links" with its own URL);
- the chat copy is Amazon Q Developer's custom notification with `textType` "client-markdown", which it
  "renders ... in the target chat platform's markdown" (Slack's or Teams':
  https://docs.aws.amazon.com/chatbot/latest/adminguide/custom-notifs.html, "Parameter details"). Slack reads
  `&`, `<` and `>` as "control characters for special parsing" (https://api.slack.com/reference/surfaces/
  formatting, "Escaping text"): `<!channel>`, `<!here>`, `<!everyone>`, `<@U...>`, `<#C...>`, `<url|text>`;
  Teams mentions are `<at>...</at>`; `@here`/`@channel` are mentions where names are linked; markdown makes
  `[text](url)` a link whose target the reader does not see, and chat clients and mail readers make a bare
  `https://...` clickable.

`shown` is the one function every composer passes such text through (trainguard.domain.messages passes every
section's text, its own included, so no composer can forget one). It removes what could change the message's
shape and turns what could act into visible look-alikes, so the reader still sees what the text said:
- line breaks of every kind become "\\n" (the composer indents every line after the first, so no line of the
  text starts a section); tabs become spaces; other control, format (zero-width, bidi overrides, the tag
  characters), surrogate, private-use and unassigned characters (Unicode categories Cc, Cf, Cs, Co, Cn) are
  removed;
- `<` and `>` become U+2039 and U+203A, single angle quotation marks (no Slack control sequence, no Teams `<at>`,
  no HTML); `@` becomes U+FF20, the fullwidth at sign (no `@here`, `@channel` or `@user`); an `&` that starts an
  entity (`&lt;`) becomes U+FF06, the fullwidth ampersand;
- `scheme://host` becomes `scheme[:]//host` with the host's dots as `[.]`, `www.` becomes `www[.]`, and `](`
  becomes `] (`, so no link can be made of the text; a bare domain that chat clients link by themselves
  (`evil-console.com/login`: a name with a path after it, or ending in a common top-level domain) gets its dots
  as `[.]` too. Names of code and files (`torch.cuda.OutOfMemoryError`, `train.py`, `ml.p5.48xlarge`) are kept:
  their last part is no common top-level domain and no path follows.

`as_markdown` is the chat channel's own step on top: trainguard's chat headings are `*Title*`, so `*` becomes
U+2217 (asterisk operator); a backtick (which could open a code block and swallow what follows) becomes U+02CB
(modifier letter grave accent); `#` (a Teams heading) becomes U+FF03; a line of only `-`, `=` or `_` (a setext
heading's underline, or a rule) is drawn with look-alikes (U+2010, U+FF1D, U+FF3F).

Links in a notification are built from structured fields only (trainguard.domain.console_links), never from text.
"""

from __future__ import annotations

import re
import unicodedata

# What str.splitlines() breaks on, besides "\n": https://docs.python.org/3/library/stdtypes.html#str.splitlines
_LINE_BREAKS = re.compile("\r\n|[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_REMOVED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})
_URL = re.compile(r"://([^\s/?#\\]*)")  # whatever comes before it: "0https://" is made a link too
_WWW = re.compile(r"\bwww\.", re.IGNORECASE)
# A bare domain, then a path or not: chat clients make a link of it themselves when its top-level domain is one
# they know. Those below are the generic ones and the most used country codes (IANA's root zone lists them all).
_BARE_DOMAIN = re.compile(r"(?<![\w.\[-])((?:[A-Za-z0-9-]{1,63}\.)+)([A-Za-z]{2,24})\b(/?)")
_LINKED_TLDS = frozenset(
    {"com", "net", "org", "io", "ai", "co", "dev", "app", "xyz", "info", "biz", "me", "ly", "sh", "site", "online"}
    | {"link", "click", "top", "cc", "tv", "to", "gg", "so", "us", "uk", "de", "fr", "jp", "cn", "ru", "in", "eu"}
)
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]{1,32};)")
_LOOK_ALIKES = str.maketrans({"<": "\u2039", ">": "\u203a", "@": "\uff20"})
_MARKDOWN_LOOK_ALIKES = str.maketrans({"*": "\u2217", "`": "\u02cb", "#": "\uff03"})
_RULE_LINE = re.compile(r"[ \-=_\u2217]*[-=_][ \-=_\u2217]*")
_RULE_LOOK_ALIKES = str.maketrans({"-": "\u2010", "=": "\uff1d", "_": "\uff3f"})


def shown(text: str) -> str:
    """`text` as data for any channel (the module's docstring says what changes and why); "\\n" is its only
    line break."""
    text = _LINE_BREAKS.sub("\n", text).replace("\t", " ")
    text = "".join(ch for ch in text if ch == "\n" or unicodedata.category(ch) not in _REMOVED_CATEGORIES)
    text = _URL.sub(lambda url: "[:]//" + url[1].replace(".", "[.]"), text)
    text = _WWW.sub(lambda www: www[0][:-1] + "[.]", text)
    text = _BARE_DOMAIN.sub(_defanged_domain, text)
    text = text.replace("](", "] (")
    text = _ENTITY.sub("\uff06", text)
    return text.translate(_LOOK_ALIKES)


def _defanged_domain(found: re.Match[str]) -> str:
    names, top, path = found[1], found[2], found[3]
    if path or top.lower() in _LINKED_TLDS:
        return names.replace(".", "[.]") + top + path
    return found[0]


def shown_on_one_line(text: str) -> str:
    """`shown`, its line breaks as spaces: for a subject, a title, an attribute."""
    return shown(text).replace("\n", " ")


def as_markdown(text: str) -> str:
    """`text` for the chat's client-markdown: `shown`, and no markdown of its own (emphasis like the chat's
    headings, code blocks, headings, rules)."""
    lines = shown(text).translate(_MARKDOWN_LOOK_ALIKES).split("\n")
    return "\n".join(line.translate(_RULE_LOOK_ALIKES) if _RULE_LINE.fullmatch(line) else line for line in lines)
