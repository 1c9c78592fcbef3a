"""Spam kept out, people let in: the spam checks measured on a labelled set the code generates.

The set (``labelled``): people's inquiries in English, Japanese and Chinese
(questions, bookings, complaints; some with one link, some with two, some
naming a shop or a price) and spam (link spam with two to six links, some
in HTML or forum markup; keyword spam with a link or none; SEO offers),
each sent with JavaScript (the proof-of-work solved) or without, from
Sundown's own page, a listed site, or no site at all (an API client, or a
script posting straight to the form). About a third of the people send
without JavaScript; a fifth of the spam comes from a browser that solves
the proof-of-work.

The admins' part, as on a live site: a training slice of the same kind of
set that they moved to spam or out of it (``app.inquiries.learned.train``,
what "Spam" and "Not spam" do), and a short word list they typed
(``WORDS``). Then every inquiry of the test slice is judged the way the
intake judges it (``spam.Verdict`` from the proof-of-work and the site,
``spam.weigh`` with the content) against a real database.

* ``spam_people_in_inbox``: share of people's inquiries that reach the inbox (goal ≥ 0.98).
* ``spam_kept_out``: share of spam filed in spam (goal ≥ 0.9).

Control ``ignores_content``: the same verdicts without ``spam.weigh`` (the
proof-of-work and the site alone, as before the content checks): it must
miss a goal (it lets through the spam sent without JavaScript). A second
control, ``proof_of_work_only`` (the old rule: no solution means spam), must
miss the people's goal.

``python -m bench --only spamset``; the test suite runs ``measure`` on a
smaller set, on both databases (``tests/inquiries/test_spam_benchmark.py``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from app import create_app
from app.core import db
from app.inquiries import learned, signals, spam
from bench.report import Control
from bench.servers import server_env
from devtools.admins import site_settings

WORDS = ["casino", "viagra", "backlinks", "crypto", "seo", "カジノ", "博彩"]
PEOPLE = {
    "en": [
        "Could you tell me if the {thing} is still available next week?",
        "Hello, I booked the {thing} for {day} but need to change the time. Is that possible?",
        "My order of the {thing} arrived damaged. What should I do? Order number {number}.",
        "We are a school group of {number} and would like to visit. Do you offer a discount?",
        "I saw the {thing} on {link} and wondered whether you deliver to Osaka.",
        "Is there parking near the shop? I will come by car on {day}.",
        "Thanks for the quick answer yesterday. One more question: can I pay by invoice?",
        "The form on {link} did not load, so I am writing here. Price for {number} pieces?",
    ],
    "ja": [
        "{thing}の在庫はまだありますか？来週伺いたいです。",
        "{day}に予約しましたが、時間を変更できますか。",
        "注文番号{number}の商品が破損していました。どうすればよいですか。",
        "{link} で見た{thing}について質問があります。大阪への配送は可能でしょうか。",
    ],
    "zh": [
        "请问{thing}下周还有货吗？",
        "我在{day}预约了，但需要改时间，可以吗？",
        "订单{number}的商品到货时坏了，应该怎么办？",
        "我在 {link} 看到{thing}，请问可以寄到上海吗？",
    ],
}
THINGS = ["blue teapot", "workshop", "room", "bicycle", "gift box", "茶器", "自行车"]
DAYS = ["Monday", "the 14th", "Friday afternoon", "5月3日", "周六"]
SPAM = [
    "Boost your rankings! Cheap SEO backlinks: {links}",
    "Best online casino bonus, play now {links}",
    '<a href="{link}">cheap viagra</a> <a href="{link}">pills</a> {links}',
    "[url={link}]Crypto profits[/url] guaranteed returns, invest today {links}",
    "Dear owner, we can get your website on the first page of Google. Reply for our offer {links}",
    "Hot singles in your area {links}",
    "Earn $5000 a week from home, no experience {links}",
    "最高のカジノボーナス {links}",
    "博彩平台注册送彩金 {links}",
    "Increase traffic with our backlinks package: {link}",
]


@dataclass(frozen=True)
class Item:
    """One labelled inquiry: its text and sender, whether it was spam, how it was sent."""

    text: str
    email: str
    is_spam: bool
    javascript: bool
    site: spam.Reason | None


def labelled(count: int, seed: int) -> list[Item]:
    """``count`` inquiries, about two people to one spam, drawn with ``seed``."""
    rng = random.Random(seed)
    return [(_spam if rng.random() < 0.35 else _person)(rng) for _ in range(count)]


def _link(rng: random.Random, host: str = "") -> str:
    name = host or rng.choice(["shop", "blog", "www", "x"])
    return f"https://{name}.{rng.choice(['example', 'test'])}/{rng.randint(1, 999)}"


def _person(rng: random.Random) -> Item:
    language = rng.choice(["en", "en", "ja", "zh"])
    template = rng.choice(PEOPLE[language])
    text = template.format(
        thing=rng.choice(THINGS), day=rng.choice(DAYS), number=rng.randint(2, 90000), link=_link(rng)
    )
    if rng.random() < 0.1:
        text += f" See also {_link(rng)}"
    site = rng.choice([spam.Reason.OWN_PAGE, spam.Reason.LISTED_SITE, spam.Reason.LISTED_SITE, None])
    return Item(text, f"person{rng.randint(1, 10**6)}@mail.example", False, rng.random() > 0.35, site)


def _spam(rng: random.Random) -> Item:
    links = " ".join(_link(rng, rng.choice(["promo", "deal", "win"])) for _ in range(rng.randint(0, 5)))
    text = rng.choice(SPAM).format(links=links, link=_link(rng, "promo"))
    site = rng.choice([None, None, spam.Reason.LISTED_SITE])  # a script, or a forged Origin header
    return Item(
        text, f"{rng.choice(['seo', 'offer', 'win'])}{rng.randint(1, 50)}@bulk.example", True, rng.random() < 0.2, site
    )


def verdict_of(item: Item) -> spam.Verdict:
    """The request's verdict: solved with JavaScript, else no solution; the site's credit."""
    base = spam.Verdict(None, "solved") if item.javascript else spam.Verdict(spam.Reason.NO_SOLUTION)
    return base.adding(item.site.value) if item.site else base


def measure(app, train: list[Item], test: list[Item], variant: str = "") -> tuple[float, float]:
    """Teach ``app``'s database the admins' moves on ``train`` and their word list, then judge ``test``:
    (share of people in the inbox, share of spam kept out). ``variant``: a control (see the module)."""
    with app.app_context():
        with db.transaction(write=True) as session:
            signals.save_words(session, signals.parse_words("\n".join(WORDS)))
            learned.train(session, [(item.text, item.email) for item in train if item.is_spam], as_spam=True)
            learned.train(session, [(item.text, item.email) for item in train if not item.is_spam], as_spam=False)
        with app.test_request_context("/"), db.reading() as session:
            judged = [(item, _judge(session, item, variant)) for item in test]
    people = [spam_ for item, spam_ in judged if not item.is_spam]
    spams = [spam_ for item, spam_ in judged if item.is_spam]
    return people.count(False) / len(people), spams.count(True) / len(spams)


def _judge(session, item: Item, variant: str) -> bool:
    verdict = verdict_of(item)
    if variant == "proof_of_work_only":
        return not item.javascript
    if variant != "ignores_content":
        verdict = spam.weigh(session, verdict, item.text, item.email)
    return verdict.spam


def run(ctx) -> None:
    """Both databases: the figures, then the two controls on a fresh database each."""
    size = 600 if ctx.quick else 3000
    train, test = labelled(size // 3, seed=1), labelled(size, seed=2)
    for kind in ("sqlite", "postgresql"):
        for variant in ("", "ignores_content", "proof_of_work_only"):
            database = ctx.database(kind, f"spamset{variant}")
            app = create_app(site_settings(server_env(database.url)))
            try:
                _figures(ctx, kind, variant, measure(app, train, test, variant), len(test))
            finally:
                db.engine_of(app).dispose()
                database.drop()


def _figures(ctx, kind: str, variant: str, shares: tuple[float, float], count: int) -> None:
    note = f"{count} inquiries judged, the admins' moves on a third as many"
    people = ctx.report.add("spam_people_in_inbox", shares[0], "≥ 0.98", kind, note, variant=variant)
    kept = ctx.report.add("spam_kept_out", shares[1], "≥ 0.9", kind, note, variant=variant)
    if variant:
        ctx.report.control(Control(f"spam_{variant}", variant, [people, kept]))
