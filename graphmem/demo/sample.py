"""A sample conversation written for graphmem (not LoCoMo data): two friends over three dated
sessions, with facts that only connect across sessions."""

from __future__ import annotations

from dataclasses import dataclass

from graphmem.queries import cypher_dir


@dataclass(frozen=True)
class Turn:
    session: int
    date: str
    speaker: str
    text: str


_S1, _S2, _S3 = "2:00 pm on 3 March, 2024", "6:30 pm on 21 March, 2024", "10:15 am on 2 June, 2024"

CONVERSATION: tuple[Turn, ...] = (
    Turn(
        1,
        _S1,
        "Priya",
        "I just signed up for a pottery class at the community centre downtown. The first lesson is next Saturday!",
    ),
    Turn(1, _S1, "Tom", "Nice! Isn't your sister Anika a ceramic artist?"),
    Turn(
        1,
        _S1,
        "Priya",
        "Yes, Anika sells her bowls at the Riverside farmers market. She is the one who convinced me to try pottery.",
    ),
    Turn(
        1,
        _S1,
        "Tom",
        "I'm training for the Lisbon half marathon in May, but my left knee has been sore after long runs.",
    ),
    Turn(2, _S2, "Priya", "My second pottery lesson went great: I finally centred the clay on the wheel."),
    Turn(
        2,
        _S2,
        "Tom",
        "My physiotherapist says the knee pain comes from running too much on concrete, so I'm switching to trail runs.",
    ),
    Turn(
        2, _S2, "Priya", "Anika offered me a corner of her stall at the Riverside market to sell my first mugs in June."
    ),
    Turn(2, _S2, "Tom", "That's a big step! I booked my flight to Lisbon for the 11th of May."),
    Turn(3, _S3, "Tom", "I finished the Lisbon half marathon in 1 hour 52 minutes, and my knee held up the whole way."),
    Turn(
        3,
        _S3,
        "Priya",
        "Congratulations! I sold eight mugs at the Riverside market last weekend, right next to Anika's bowls.",
    ),
    Turn(3, _S3, "Tom", "Eight mugs after only three months of lessons is impressive."),
    Turn(3, _S3, "Priya", "I'm now saving up for my own pottery wheel so I can practise at home."),
)

QUESTIONS: tuple[str, ...] = (
    "Where did Priya sell her first mugs, and who gave her the spot?",
    "What did Tom change because of his knee, and how did the knee do in the Lisbon race?",
    "How long had Priya been taking pottery lessons when she sold her mugs?",
)

# The demo's saved Browser query (cypher/browse/demo.cypher), printed without its comment lines.
BROWSER_QUERY = "\n".join(
    line
    for line in (cypher_dir() / "browse" / "demo.cypher").read_text(encoding="utf-8").splitlines()
    if not line.startswith("//")
)


def as_note_text(turn: Turn) -> str:
    return f"{turn.speaker}: {turn.text}"
