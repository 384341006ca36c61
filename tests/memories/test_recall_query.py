"""What recall reads of a query: all of a short one, the end of a long one from a word on."""

from memories.recall.query import WORD_MAX_CHARS, query_for_recall


def test_a_short_query_is_read_whole():
    assert query_for_recall("  where does the user live?\n", limit=100) == (
        "where does the user live?"
    )


def test_a_query_of_exactly_the_limit_is_read_whole():
    query = "a" * 99 + "?"

    assert query_for_recall(query, limit=100) == query


def test_a_long_query_is_read_from_the_first_whole_word_of_its_end():
    query = "filler " * 50 + "what should I cook tonight?"

    read = query_for_recall(query, limit=40)

    assert read == "filler what should I cook tonight?"
    assert query.endswith(read)


def test_a_cut_between_words_keeps_the_first_word():
    query = "first second third"

    assert query_for_recall(query, limit=len("second third")) == "second third"
    assert query_for_recall(query, limit=len(" second third")) == "second third"


def test_a_cut_inside_a_word_drops_the_rest_of_it():
    assert query_for_recall("first second third", limit=len("cond third")) == "third"


def test_text_without_spaces_is_cut_where_the_limit_falls():
    query = "我最近一直在想这个周末要做什么" * 20

    read = query_for_recall(query, limit=50)

    assert len(read) == 50 and query.endswith(read)


def test_a_very_long_word_is_cut_where_the_limit_falls():
    query = "start " + "x" * (WORD_MAX_CHARS * 3) + " end"

    read = query_for_recall(query, limit=WORD_MAX_CHARS * 2)

    assert read == "x" * (WORD_MAX_CHARS * 2 - 4) + " end"


def test_the_limit_defaults_to_the_setting(settings):
    settings.RECALL_QUERY_READ_CHARS = 12
    query = "one two three four five"

    assert query_for_recall(query) == "four five"
