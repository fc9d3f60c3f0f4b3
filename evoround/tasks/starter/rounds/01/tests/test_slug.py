from slug import slugify


def test_words_joined_by_hyphens():
    assert slugify("  Hello   World ") == "hello-world"


def test_single_word():
    assert slugify("Evoround") == "evoround"
