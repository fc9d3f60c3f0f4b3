"""The failing twins' helper (far values), added to a test file that gets twins (see
evoround/verifiers/_twins.py, used by the script verifier's guard).

A template: the host copies the text after the marker line with each capitalised name
replaced, HELPER, VALUE, OTHERS, TEMP, KIND and OUT by names made of the test file's own
words (see evoround/verifiers/_names.py), SHIFT by a number and TOKEN by a text drawn per
run. The values below only let the file be checked on its own.
"""

SHIFT = 1
TOKEN = "0"
# The text below is copied byte for byte into test files: their layout is the helper's.
# fmt: off
# ---- the helper, copied from the next line on ----


def HELPER(VALUE, *OTHERS):
    if OTHERS:
        try:
            if bool(VALUE == HELPER(OTHERS[0])):
                return True
        except Exception:
            pass
        try:
            return bool(HELPER(VALUE) == OTHERS[0])
        except Exception:
            return False
    TEMP = TOKEN
    try:
        KIND = type(VALUE)
        if KIND is bool or VALUE is None:
            OUT = object()
        elif isinstance(VALUE, int):
            OUT = VALUE + SHIFT
        elif isinstance(VALUE, float):
            OUT = VALUE * 1.5 + SHIFT
        elif isinstance(VALUE, str):
            OUT = VALUE + TEMP
        elif isinstance(VALUE, bytes):
            OUT = VALUE + TEMP.encode()
        elif KIND in (list, tuple):
            OUT = KIND(list(VALUE) + [TEMP])
        elif KIND is dict:
            OUT = dict(VALUE)
            OUT[TEMP] = TEMP
        elif KIND in (set, frozenset):
            OUT = KIND(set(VALUE) | {TEMP})
        else:
            OUT = object()
        if type(OUT) is not object and OUT == VALUE:
            OUT = object()
    except Exception:
        OUT = object()
    return OUT
