"""The failing twins' helper (values of the original's shape), added to a test file that
gets twins (see evoround/verifiers/_twins.py, used by the pytest verifier).

A template: the host copies the text after the marker line with each capitalised name
replaced, HELPER, VALUE, OTHERS, TEMP, KIND and OUT by names made of the test file's own
words (see evoround/verifiers/_names.py), SHIFT and SCALE by numbers drawn per run. The
values below only let the file be checked on its own.
"""

SHIFT = 1
SCALE = 0.5
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
    try:
        KIND = type(VALUE)
        if KIND is bool or VALUE is None:
            OUT = object()
        elif isinstance(VALUE, int):
            TEMP = str(abs(VALUE))
            OUT = int(str((int(TEMP[0]) + SHIFT) % 9 + 1) + TEMP[1:]) * (-1 if VALUE < 0 else 1)
        elif isinstance(VALUE, float):
            TEMP = len(repr(VALUE).partition(".")[2])
            OUT = float(HELPER(int(VALUE))) if VALUE.is_integer() else round(VALUE * SCALE, TEMP)
        elif isinstance(VALUE, (str, bytes)):
            TEMP = VALUE.decode("latin-1") if isinstance(VALUE, bytes) else VALUE
            TEMP = "".join(
                chr((ord(OUT) - 97 + SHIFT) % 26 + 97) if "a" <= OUT <= "z"
                else chr((ord(OUT) - 65 + SHIFT) % 26 + 65) if "A" <= OUT <= "Z"
                else str((int(OUT) + SHIFT) % 10) if "0" <= OUT <= "9"
                else OUT
                for OUT in TEMP
            )
            OUT = TEMP.encode("latin-1") if isinstance(VALUE, bytes) else TEMP
        elif KIND in (list, tuple):
            OUT = KIND(list(VALUE) + [object()])
        elif KIND is dict:
            OUT = dict(VALUE)
            OUT[object()] = object()
        elif KIND in (set, frozenset):
            OUT = KIND(set(VALUE) | {object()})
        else:
            OUT = object()
        if type(OUT) is not object and OUT == VALUE:
            OUT = object()
    except Exception:
        OUT = object()
    return OUT
