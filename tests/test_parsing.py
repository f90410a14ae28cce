import pytest

from hardcse.art.generator.parsing import REASONS, parse_response

ANCHOR = "Powell was a transformational leader of the organisation."


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (
            "Powell led the organisation in a transformational way.",
            "Powell led the organisation in a transformational way.",
        ),
        ('Positive: "Powell led the organisation with vision."', "Powell led the organisation with vision."),
        ("**Variation:** Powell changed the organisation deeply.", "Powell changed the organisation deeply."),
        (f'Original: "{ANCHOR}"\nPositive: Powell reshaped the organisation.', "Powell reshaped the organisation."),
        (
            f'Original: "{ANCHOR}"\n\nPositive:\nThe organisation was led by Powell.',
            "The organisation was led by Powell.",
        ),
        (
            'Original: "Powell played a transformational leader." \nTransitive verb reference is',
            "Powell played a transformational leader.",
        ),
        ("Powell was a visionary leader.\n\nNote: I changed the adjective.", "Powell was a visionary leader."),
        ("Negative: Powell was a weak manager of the club.", "Powell was a weak manager of the club."),
        (
            "Powell’s leadership – bold – transformed the organisation.",
            "Powell’s leadership – bold – transformed the organisation.",
        ),
    ],
)
def test_extracts_the_sentence(response, expected):
    parsed = parse_response(response, ANCHOR)
    assert parsed.ok and parsed.sentence == expected


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        ("", "empty"),
        ("   \n ", "empty"),
        (f'Original: "{ANCHOR}"', "empty"),
        ("Positive:", "empty"),
        ("Prosciendo: Affirmativity", "too_short"),
        ("Yes.", "too_short"),
        (" ".join(["word"] * 80) + ".", "too_long"),
        (ANCHOR, "copy"),
        ("powell was a transformational leader of the organisation", "copy"),
        ("Powell was good. He led the organisation well.", "several_sentences"),
        ("Powell était un leader transformationnel.", "non_text"),
        ("נשׁה שׁלוליאכ אנאיני", "non_text"),
        ("123 456 789 000", "non_text"),
        ("Here is a correction of the original result: Powell left.", "meta_text"),
        ("Note: the sentence keeps its meaning.", "meta_text"),
        ('We changed the sentence to, "Powell led the organisation', "meta_text"),
        ("A positive variation of the original sentence with better wording:", "meta_text"),
        ("The original sentence has been modified to create a variation.", "meta_text"),
        ('The organisation had a leader named Powell." Positive:', "meta_text"),
    ],
)
def test_rejections_have_named_reasons(response, reason):
    parsed = parse_response(response, ANCHOR)
    assert not parsed.ok and parsed.reason == reason and reason in REASONS


def test_non_ascii_that_the_anchor_has_is_text():
    anchor = "Milenić was born in Foča, in Bosnia."
    parsed = parse_response("Milenić came from Foča in Bosnia.", anchor)
    assert parsed.ok
    assert parse_response("Milenić was born in Łódź.", anchor).reason == "non_text"
