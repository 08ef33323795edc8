"""Grounding of enrichment (issue 27): contexts that say only what the note says.

The four demo cases are what the 1.5B model wrote for `graphmem demo`'s turns; each must be refused
for its own reason, and a faithful context of the same turn must pass.
"""

from __future__ import annotations

import pytest

from graphmem.service.grounding import ground, sentence_refusal, speaker_of
from graphmem.service.wording import stem

SISTER = "Tom: Nice! Isn't your sister Anika a ceramic artist?"
STALL = "Priya: Anika offered me a corner of her stall at the Riverside market to sell my first mugs in June."
MUGS = "Tom: Eight mugs after only three months of lessons is impressive."
MARATHON = "Tom: I'm training for the Lisbon half marathon in May, but my left knee has been sore after long runs."

DEMO_CASES = [
    (SISTER, "Tom asks if Anika, his sister, is a ceramic artist.", "someone's own"),
    (
        SISTER,
        "This question touches on the topic of art and its representation in the digital age, as ceramic "
        "artists are often associated with the digital world.",
        "does not",
    ),
    (STALL, "Priya offered Anika a corner of her stall at the Riverside market.", "swaps who did what"),
    (MUGS, "Tom has shown impressive progress in his mug-making skills.", "nothing of Tom's own"),
    (MUGS, "The speaker has shown impressive progress in mug-making skills.", "does not"),
    (
        MARATHON,
        "He has been running for several months, and it can be managed with proper training and rest.",
        "does not",
    ),
]


@pytest.mark.parametrize(("content", "sentence", "why"), DEMO_CASES)
def test_the_demo_inventions_are_refused(content: str, sentence: str, why: str) -> None:
    refusal = sentence_refusal(sentence, content, speaker_of(content))
    assert refusal is not None and why in refusal


@pytest.mark.parametrize(
    ("content", "sentence"),
    [
        (SISTER, "Tom asks whether Anika is a ceramic artist."),
        (STALL, "Anika offered Priya a corner of her stall at the Riverside market to sell mugs in June."),
        (MUGS, "Tom finds eight mugs after three months of lessons impressive."),
        (MARATHON, "Tom is training for the Lisbon half marathon in May; his left knee is sore after long runs."),
    ],
)
def test_faithful_contexts_of_the_same_turns_pass(content: str, sentence: str) -> None:
    assert sentence_refusal(sentence, content, speaker_of(content)) is None


SOLD = "Priya: Congratulations! I sold eight mugs at the Riverside market last weekend, right next to Anika's bowls."


def test_another_person_doing_what_the_speaker_did_is_refused() -> None:
    refusal = sentence_refusal("Anika sold eight mugs at the Riverside market.", SOLD, "Priya")
    assert refusal is not None and "makes Anika do what the note says Priya did" in refusal
    assert sentence_refusal("Priya sold eight mugs next to Anika's bowls.", SOLD, "Priya") is None


def test_the_speaker_doing_something_in_a_note_that_says_nothing_of_them_is_refused() -> None:
    # "Tom made eight mugs": the note is Tom's comment on someone else's mugs, no I/my in it
    refusal = sentence_refusal("Tom made eight mugs in three months of lessons.", MUGS, "Tom")
    assert refusal is not None and "nothing of Tom's own" in refusal


def test_a_name_the_note_never_mentions_is_refused() -> None:
    content = "Priya: My second pottery lesson went great."
    assert "names Anika" in (sentence_refusal("Priya tells Anika about her lesson.", content, "Priya") or "")


def test_the_speakers_own_things_may_be_theirs() -> None:
    content = "Tom: My physiotherapist says the knee pain comes from running on concrete."
    assert sentence_refusal("Tom's physiotherapist says his knee pain comes from running.", content, "Tom") is None


def test_ground_keeps_supported_sentences_and_reports_the_rest() -> None:
    context = "Tom is training for the Lisbon half marathon in May. He has been running for several months."
    g = ground(MARATHON, context, ["Lisbon half marathon", "knee pain", "long runs"])
    assert g.context == "Tom is training for the Lisbon half marathon in May."
    assert g.keywords == ["Lisbon half marathon", "long runs"]
    assert len(g.refused) == 2
    assert any("keyword 'knee pain'" in r for r in g.refused)


def test_a_note_without_a_speaker_still_refuses_inventions() -> None:
    content = "The boiler was serviced on 3 May."
    assert speaker_of(content) is None
    assert sentence_refusal("The boiler was serviced in May.", content, None) is None
    assert sentence_refusal("The landlord replaced the faulty heating pump cheaply.", content, None) is not None


# Three of the five statements the gold forbade in the 1.5B's contexts on the gold set, before the
# actor and listener rules (docs/results/decisions-grounding/); each must now be refused.
@pytest.mark.parametrize(
    ("content", "sentence", "why"),
    [
        (
            "Lena: Whoa, big move. Are you nervous about leaving such a stable job?",
            "Lena is asking if she is nervous about leaving her current stable job.",
            "the person spoken to",
        ),
        (
            "Omar: Pixel knocked my new work laptop off the desk this morning. It still boots, thankfully.",
            "Omar knocked his new work laptop off the desk this morning, but it still boots, thankfully.",
            "makes Omar do what the note says Pixel did",
        ),
        (
            "Aiko: Start the speech with the story of Nora getting lost at the zoo when she was six, everyone "
            "loves that one.",
            "Aiko starts the speech with the story of Nora getting lost at the zoo when she was six.",
            "nothing of Aiko's own",
        ),
    ],
)
def test_the_gold_runs_inventions_are_refused(content: str, sentence: str, why: str) -> None:
    refusal = sentence_refusal(sentence, content, speaker_of(content))
    assert refusal is not None and why in refusal, refusal


def test_the_listener_rule_leaves_the_listener_alone() -> None:
    content = "Lena: Whoa, big move. Are you nervous about leaving such a stable job?"
    assert (
        sentence_refusal("Lena asks whether the other person is nervous about leaving a stable job.", content, "Lena")
        is None
    )


BOWLS = (
    "Priya: Yes, Anika sells her bowls at the Riverside farmers market. She is the one who convinced me to try pottery."
)


def test_what_was_done_to_the_speaker_is_not_made_the_speakers_deed() -> None:
    # the 1.5B's context for this demo turn on 5 December 2026 (the name checks let it through)
    wrong = "Priya suggests Anika sell her bowls at the Riverside farmers market and convinces her to try pottery."
    refusal = sentence_refusal(wrong, BOWLS, "Priya")
    assert refusal is not None and "done to Priya" in refusal
    assert "done to Priya" in (sentence_refusal("Priya convinced her to try pottery.", BOWLS, "Priya") or "")
    # the same turn's context on 5 December 2026, evening run: the relative clause reverses the roles
    assert "done to Priya" in (
        sentence_refusal("Priya is the one who convinced Anika to try pottery.", BOWLS, "Priya") or ""
    )
    for right in (
        "Anika convinced her to try pottery.",
        "Priya says Anika is the one who convinced her to try pottery.",
        "Anika is the one who convinced Priya to try pottery.",
        "Anika sells her bowls at the Riverside farmers market and convinced Priya to try pottery.",
    ):
        assert sentence_refusal(right, BOWLS, "Priya") is None, right


@pytest.mark.parametrize(
    ("content", "sentence"),
    [  # faithful contexts of LoCoMo conv-26 turns (paraphrased here) that a looser rule refused
        (
            "Mel: I ran a charity race last Saturday and it made me think about self-care.",
            "Mel ran a charity race last Saturday, which was rewarding and made her think about self-care.",
        ),
        (
            "Mel: My husband and kids keep me motivated.",
            "Mel is happy to have her husband and kids, who keep her motivated.",
        ),
        (
            "Cara: I felt accepted, just being around people who accepted and celebrated me.",
            "Cara felt accepted around people who accepted and celebrated her.",
        ),
    ],
)
def test_a_relative_clause_keeps_its_own_subject(content: str, sentence: str) -> None:
    assert sentence_refusal(sentence, content, speaker_of(content)) is None


@pytest.mark.parametrize(
    ("british", "american"),
    [("centred", "centering"), ("practise", "practice"), ("favourite", "favorite"), ("travelled", "traveled")],
)
def test_one_word_in_two_spellings_is_one_stem(british: str, american: str) -> None:
    assert stem(british) == stem(american)


def test_a_context_in_american_spelling_is_not_an_invention() -> None:
    # the demo turn of 5 December 2026: the 1.5B wrote "centering" and "practice" for the note's
    # "centred" and "practise"
    note = "Priya: My second pottery lesson went great: I finally centred the clay on the wheel."
    assert sentence_refusal("Priya finally got the clay centering on the wheel in her lesson.", note, "Priya") is None
    wheel = "Priya: I'm now saving up for my own pottery wheel so I can practise at home."
    assert sentence_refusal("Priya is saving up for a pottery wheel to practice at home.", wheel, "Priya") is None
    # the same sentence with what the note never says is still refused
    assert sentence_refusal(
        "Priya finally got the clay centering, and her teacher praised her patience.", note, "Priya"
    )


def test_a_tag_from_a_refused_sentence_is_refused() -> None:
    # What the 1.5B wrote for the demo's mugs turn on 7 December: the context was refused, the tag
    # "coffee" (from the same invention) stayed and reached search.
    g = ground(MUGS, "Tom has been learning to make coffee in his new mugs.", ["mugs"], ["coffee", "mug", "pottery"])
    assert g.context == ""
    assert g.tags == ["mug", "pottery"]
    assert any("tag 'coffee'" in r for r in g.refused)


def test_category_tags_and_tags_of_kept_sentences_stay() -> None:
    context = "Tom is training for the Lisbon half marathon in May. He has been running for several months."
    g = ground(MARATHON, context, [], ["health", "marathon", "months"])
    # "months" is only in the refused sentence; "health" is a category nobody refused.
    assert g.tags == ["health", "marathon"]
    assert g.refused[-1].startswith("tag 'months'")
    # A refused sentence's framing ("Tom asks") is no invention.
    asked = ground(SISTER, "Tom asks if Anika, his sister, is a ceramic artist.", [], ["asking", "family"])
    assert asked.context == ""
    assert asked.tags == ["asking", "family"]
