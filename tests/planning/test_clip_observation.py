"""The particle context's observation clip keeps the head (the place) and the tail (the exits)."""

from hypothesis import given
from hypothesis import strategies as st

from smcplan.planning.text_particle import ELISION, clip_observation

KITCHEN = (
    "You are in the kitchen. In one part of the room you see a stove. There is also an oven. "
    "You also see a fridge that is closed. In another part of the room you see a counter, that "
    "has nothing on it. In one part of the room you see a kitchen cupboard that is closed. "
    "There is also a cutlery drawer that is closed. You also see a trash can that is closed. In "
    "another part of the room you see a dishwasher that is closed. In one part of the room you "
    "see a dining chair, that has nothing on it. \nTo the North you see a closed wood door. To "
    "the East you see a closed frosted-glass door. To the West you see the corridor. "
)


def test_a_long_twx_room_keeps_its_place_and_its_doors():
    out = clip_observation(KITCHEN, 300)
    assert len(out) == 300
    assert out.startswith("You are in the kitchen.")
    assert out.endswith("To the West you see the corridor.")
    assert "To the North you see a closed wood door." in out and ELISION in out


def test_a_short_observation_is_only_made_one_line():
    assert clip_observation("You are in the\n pantry.  ", 300) == "You are in the pantry."


@given(st.text(alphabet="ab \n", max_size=400), st.integers(1, 350))
def test_the_clip_never_exceeds_its_limit_and_keeps_both_ends(text, limit):
    flat = " ".join(text.split())
    out = clip_observation(text, limit)
    assert len(out) <= limit
    if len(flat) <= limit:
        assert out == flat
    elif limit >= len(ELISION) + 2:
        head, tail = out.split(ELISION, 1)
        assert flat.startswith(head) and flat.endswith(tail)
        assert len(head) + len(tail) == limit - len(ELISION)
