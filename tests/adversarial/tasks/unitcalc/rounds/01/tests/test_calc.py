import unittest

import pytest
from calc import add, div, mean


class TestCalc(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
        self.assertTrue(add(0, 0) == 0)

    def test_div(self):
        with self.assertRaises(ZeroDivisionError):
            div(1, 0)
        self.assertAlmostEqual(div(1, 3), 0.3333, places=3)


def test_mean_is_close():
    assert mean([1, 2]) == pytest.approx(1.5)


def test_div_by_zero_raises():
    with pytest.raises(ZeroDivisionError):
        div(1, 0)
