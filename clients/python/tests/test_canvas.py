"""Infilling, templates with holes and logprobs through the Python client, against the real
services (started by tests/python_client/python_client_driver) serving models/unmask-kjv."""

import os
import re
import unittest

import grpc

from unmask_client import Client, TokenLogprob, TopLogprob, UnmaskError
from unmask_client.client import build_request

TARGET = os.environ.get("UNMASK_SCHEDULER", "")
KEY = os.environ.get("UNMASK_API_KEY", "")
MODEL = os.environ.get("UNMASK_MODEL", "unmask-kjv")

# A JSON record whose values the model fills: 3 + 8 tokens of holes, the rest kept byte for byte.
RECORD = '{"book": "<hole:3>", "verse": "<hole:8>"}'
RECORD_FILLED = re.compile(r'\A\{"book": "(.*)", "verse": "(.*)"\}\Z', re.S)


def check_logprobs(test, entries, k):
    """Every entry a log-probability (<= 0) with k alternatives, most likely first."""
    for e in entries:
        test.assertIsInstance(e, TokenLogprob)
        test.assertLessEqual(e.logprob, 1e-6, e)
        test.assertEqual(len(e.top), k, e)
        test.assertTrue(all(isinstance(t, TopLogprob) for t in e.top))
        tops = [t.logprob for t in e.top]
        test.assertEqual(tops, sorted(tops, reverse=True), e)
        test.assertTrue(all(t <= 1e-6 for t in tops), e)
        if e.top:
            test.assertLessEqual(e.logprob, e.top[0].logprob + 1e-5, e)  # nothing beats the most likely
        # Its vocabulary rank (vLLM's): 1 + the alternatives strictly more likely, when it is one of
        # them; beyond them otherwise.
        test.assertGreaterEqual(e.rank, 1, e)
        if e.token in [t.token for t in e.top]:
            test.assertEqual(e.rank, 1 + sum(t.logprob > e.logprob for t in e.top), e)
        else:
            test.assertGreater(e.rank, len(e.top), e)


@unittest.skipUnless(TARGET, "needs the stack of python_client_driver")
class CanvasAgainstTheStackTest(unittest.TestCase):
    def setUp(self):
        self.client = Client(TARGET, api_key=KEY, timeout=300)

    def tearDown(self):
        self.client.close()

    def test_infill_generates_the_gap_only(self):
        r = self.client.infill("In the beginning God created the heaven", " and the earth.", gen_length=4,
                               model=MODEL)
        self.assertEqual(r.accepted.params["gen_length"], 4)
        self.assertEqual(len(r.ids), 4)
        self.assertIsInstance(r.text, str)
        self.assertNotIn("In the beginning", r.text)  # the prompt is not part of the output
        self.assertEqual(r.logprobs, [])  # not asked for

    def test_infill_with_stop_at_eos_and_logprobs(self):
        r = self.client.infill("And God said, Let there be light:", " And God saw the light.", gen_length=8,
                               model=MODEL, stop_at_eos=True, logprobs=2)
        self.assertIn(r.finish_reason, ("length", "eos"))
        self.assertTrue(r.logprobs)
        check_logprobs(self, r.logprobs, 2)
        positions = [e.position for e in r.logprobs]
        self.assertEqual(positions, sorted(positions))
        self.assertTrue(all(0 <= p < 8 for p in positions), positions)

    def test_fill_template_keeps_the_fixed_text_and_fills_the_holes(self):
        r = self.client.fill_template(RECORD, "John 3:16", model=MODEL, logprobs=3)
        m = RECORD_FILLED.match(r.text)
        self.assertIsNotNone(m, f"the fixed text of the template is not kept: {r.text!r}")
        self.assertEqual(r.accepted.params["gen_length"], len(r.ids))  # the template's length in tokens
        # The holes, and only they, were generated: 3 + 8 positions with a logprob each.
        self.assertEqual(len(r.logprobs), 11, r.logprobs)
        positions = [e.position for e in r.logprobs]
        self.assertEqual(positions, sorted(set(positions)))
        self.assertTrue(all(0 <= p < len(r.ids) for p in positions), positions)
        for e in r.logprobs:
            self.assertEqual(e.token, r.ids[e.position], e)
        check_logprobs(self, r.logprobs, 3)
        # The holes are in two runs: 3 tokens for the book, 8 for the verse.
        runs, last = [], None
        for p in positions:
            if last is not None and p == last + 1:
                runs[-1] += 1
            else:
                runs.append(1)
            last = p
        self.assertEqual(runs, [3, 8], positions)

    def test_fill_template_keeps_text_before_and_after_its_holes(self):
        r = self.client.fill_template("In the beginning God created <hole:4> and the earth.", "Genesis 1:1",
                                      model=MODEL)
        self.assertTrue(r.text.startswith("In the beginning God created "), r.text)
        self.assertTrue(r.text.endswith(" and the earth."), r.text)

    def test_fill_template_needs_a_prompt(self):
        with self.assertRaisesRegex(ValueError, "prompt"):
            self.client.fill_template("a <hole:2> b", "", model=MODEL)

    def test_a_literal_marker_is_kept(self):
        r = self.client.fill_template("<<hole:2> means <hole:2>", "Note:", model=MODEL)
        self.assertTrue(r.text.startswith("<hole:2> means "), r.text)

    def test_generate_logprobs_cover_every_position_and_the_steps_carry_them(self):
        r = self.client.generate("And God said unto Moses,", model=MODEL, gen_length=16, block_length=16, steps=16,
                                 logprobs=3)
        self.assertEqual([e.position for e in r.logprobs], list(range(16)))
        self.assertEqual([e.token for e in r.logprobs], r.ids)
        check_logprobs(self, r.logprobs, 3)
        for e in r.logprobs:  # greedy: the committed token is the most likely one
            self.assertAlmostEqual(e.logprob, e.top[0].logprob, places=4)
        self.assertEqual(r.accepted.params.get("logprobs"), 3)
        with self.client.stream("And God said unto Moses,", model=MODEL, gen_length=16, block_length=16, steps=16,
                                logprobs=0) as s:
            steps = list(s)
        for st in steps:
            self.assertEqual([e.position for e in st.logprobs], st.positions)
            self.assertEqual([e.token for e in st.logprobs], st.tokens)
            check_logprobs(self, st.logprobs, 0)
        self.assertEqual([e.position for e in s.result.logprobs], list(range(16)))

    def test_without_logprobs_there_are_none(self):
        r = self.client.generate("Amen", model=MODEL, gen_length=8, block_length=8, steps=8)
        self.assertEqual(r.logprobs, [])
        self.assertEqual(r.prompt_logprobs, [])

    def test_prompt_logprobs_score_the_prompt_on_the_first_step_and_in_the_result(self):
        prompt = "And God said unto Moses,"
        with self.client.stream(prompt, model=MODEL, gen_length=8, block_length=8, steps=8, prompt_logprobs=2) as s:
            steps = list(s)
        r = s.result
        self.assertEqual([e.position for e in r.prompt_logprobs], list(range(1, r.accepted.prompt_tokens)))
        check_logprobs(self, r.prompt_logprobs, 2)
        self.assertEqual(r.logprobs, [])  # the generated tokens' were not asked for
        self.assertEqual(steps[0].prompt_logprobs, r.prompt_logprobs)
        self.assertTrue(all(not st.prompt_logprobs for st in steps[1:]))
        # The verse scores above its own words out of order (the same tokens).
        def total(text):
            g = self.client.generate(text, model=MODEL, gen_length=1, block_length=1, steps=1, prompt_logprobs=0)
            return sum(e.logprob for e in g.prompt_logprobs)
        self.assertGreater(total("In the beginning God created the heaven and the earth."),
                           total("In the God beginning created the and heaven earth the."))

    def test_the_server_names_bad_values(self):
        cases = [
            (dict(logprobs=21), "logprobs"),
            (dict(prompt_logprobs=21), "prompt_logprobs"),
            (dict(template_text="no holes here"), "template_text"),
            (dict(template_text="a <hole:0> b"), "template_text"),
            (dict(template_text="a <hole:4097> b"), "template_text"),
            (dict(template_text="a <hole:3> b", gen_length=99), "gen_length"),
        ]
        for params, field_name in cases:
            with self.subTest(params=params):
                with self.assertRaises(UnmaskError) as e:
                    self.client.generate("x", model=MODEL, **params)
                self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
                self.assertIn(field_name, e.exception.message)


class CanvasBadInputTest(unittest.TestCase):
    """Refused in the client before any call (no server needed)."""

    def test_new_fields_reach_the_request(self):
        r = build_request("m", "x", suffix=" tail", logprobs=5)
        self.assertEqual(r.suffix, " tail")
        self.assertEqual(r.params.logprobs, 5)
        self.assertTrue(r.params.HasField("logprobs"))
        self.assertFalse(build_request("m", "x").params.HasField("logprobs"))
        self.assertEqual(build_request("m", "x", template_text="<hole:2>").template_text, "<hole:2>")

    def test_mistyped_values(self):
        with self.assertRaisesRegex(TypeError, "^logprobs: "):
            build_request("m", "x", logprobs=True)
        with self.assertRaisesRegex(TypeError, "^logprobs: "):
            build_request("m", "x", logprobs="3")
        with self.assertRaisesRegex(TypeError, "^suffix: "):
            build_request("m", "x", suffix=5)
        c = Client("127.0.0.1:1")
        try:
            with self.assertRaisesRegex(ValueError, "^suffix: "):
                c.infill("x", "", model="m")
            with self.assertRaisesRegex(TypeError, "^suffix: "):
                c.infill("x", None, model="m")
            with self.assertRaisesRegex(ValueError, "^template: "):
                c.fill_template("", "x", model="m")
            with self.assertRaisesRegex(TypeError, "^template: "):
                c.fill_template(b"<hole:2>", "x", model="m")
        finally:
            c.close()


if __name__ == "__main__":
    unittest.main()
