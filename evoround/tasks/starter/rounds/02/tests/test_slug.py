from slug import slugify


def test_words_joined_by_hyphens():
    assert slugify("  Hello   World ") == "hello-world"


def test_punctuation_dropped():
    assert slugify("Hello, World!") == "hello-world"
